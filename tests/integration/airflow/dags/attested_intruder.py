"""Code in a task that holds everything a worker holds tries to get a token for someone else (tests only).

Each map index of `intrude` reads the worker credential (the password of `assetbus_default`, as any task can)
and asks the assetbus minter for a token of conf["target"] (a running attempt of another DAG), of its own next
try, and of its sibling map index; through Airflow's own channel it reads the reserved token key as the
target's and as its sibling's task instance (an accessor it builds itself). It also reads its own token and
tries to write the reserved key. It returns what each try answered; the test reads that back from XCom.
conf["api_url"] points the credential requests at another minter than the connection's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
import jwt
from airflow.sdk import DAG, Connection, task
from airflow.sdk.execution_time.context import TaskStateStoreAccessor
from airflow.state import TaskScope

from assetbus.producers.airflow.attestation import ATTESTATION_KEY


def _ask(url: str, credential: str, body: dict[str, Any]) -> str:
    answer = httpx.post(f"{url}/airflow/tokens", json=body, headers={"Authorization": f"Bearer {credential}"},
                        timeout=60)
    return f"{answer.status_code} {answer.json().get('code') if answer.status_code != 200 else 'token'}"


def _through_airflow(ti_id: str, dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    accessor = TaskStateStoreAccessor(UUID(ti_id), TaskScope(dag_id=dag_id, run_id=run_id, task_id=task_id,
                                                             map_index=map_index))
    try:
        return f"allowed: {accessor.get(ATTESTATION_KEY)!r}"
    except Exception as error:  # what Airflow hands the task: its refusal
        return f"refused: {error!r}"


def _sibling_ti_id(ti: Any, sibling: int) -> str | None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = ti.xcom_pull(task_ids="intrude", map_indexes=sibling, key="ti_id")
        if found:
            return str(found)
        time.sleep(0.2)
    return None


with DAG(dag_id="attested_intruder", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task
    def intrude(index: int, **context: Any) -> dict[str, str]:
        ti, conf = context["ti"], context["dag_run"].conf or {}
        ti.xcom_push(key="ti_id", value=str(ti.id))
        connection = Connection.get("assetbus_default")
        url, credential = str(conf.get("api_url") or connection.host), str(connection.password)
        target = conf["target"]
        own = {"kind": "task", "dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id,
               "map_index": ti.map_index, "try_number": ti.try_number, "ti_id": str(ti.id)}
        sibling = 1 - int(ti.map_index)
        sibling_ti_id = _sibling_ti_id(ti, sibling)
        store = context["task_state_store"]
        tries: dict[str, Callable[[], str]] = {
            "other_dag_with_credential": lambda: _ask(url, credential, target),
            "other_dag_through_airflow": lambda: _through_airflow(
                target["ti_id"], target["dag_id"], target["run_id"], target["task_id"], target["map_index"]),
            "next_try_with_credential": lambda: _ask(url, credential, {**own, "try_number": ti.try_number + 1}),
            "sibling_with_credential": lambda: _ask(url, credential, {**own, "map_index": sibling,
                                                                      "ti_id": sibling_ti_id or str(ti.id)}),
            "sibling_through_airflow": lambda: _through_airflow(sibling_ti_id or "", ti.dag_id, ti.run_id,
                                                                ti.task_id, sibling),
            "write_the_reserved_key": lambda: repr(store.set(ATTESTATION_KEY, "forged")),
        }
        outcome: dict[str, str] = {"sibling_seen": str(sibling_ti_id is not None)}
        for name, attempt in tries.items():
            try:
                outcome[name] = attempt()
            except Exception as error:
                outcome[name] = f"refused: {error!r}"
        own_token = store.get(ATTESTATION_KEY)["token"]
        claims = jwt.decode(own_token, options={"verify_signature": False})
        outcome["own_token"] = f"{claims['dag_id']}/{claims['task_id']}/{claims['map_index']}/{claims['try_number']}"
        return outcome

    intrude.expand(index=[0, 1])
