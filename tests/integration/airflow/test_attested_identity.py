"""Attested identity (docs/security.md, "Identity modes"): code in a worker cannot get anyone else's token.

The session's Airflow runs `AssetbusStoreBackend` in its api-server and its assetbus minter is in `attested`
mode (the default). A run of `held_attempt` stays running; meanwhile `attested_intruder` (two map indices),
holding everything a worker holds, asks for the held attempt's token, its own next try's, and its sibling map
index's: with the worker credential and through Airflow's own channel. Every try is refused and nothing is
stored; its own token names exactly its own attempt. The same code against a minter in `credential` mode gets
the held attempt's token: the limit of that mode, and what the attested check removes. A worker that sets
`[workers] state_store_backend` gets no attested token. A token that leaked is refused, on Kafka and HTTP,
once its attempt ended and the callbacks' grace passed (a short grace here: ATTESTED_LIFETIMES).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import AsyncEmitter, AttemptEnded
from assetbus.producers.airflow.attestation import AttestedAttempt, Attestor
from assetbus.producers.tokens import unverified_claims
from assetbus.schemas import AssetRef, ErrorCode, Topics
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.stack import ATTESTED_LIFETIMES
from tests.integration.airflow.support import events_of

HELD_DAG, INTRUDER, BYPASS, REPLAY = "held_attempt", "attested_intruder", "attested_bypass", "attested_replay"
LEEWAY_S = 5
"""The verifiers' leeway on `exp`."""


@pytest.fixture(scope="module")
def held(airflow_api: AirflowApi, airflow_stack: AirflowStack) -> Iterator[dict[str, Any]]:
    """A running attempt of another DAG (it emitted once and waits), as a token request names it."""
    run_id = f"held-{uuid.uuid4().hex[:8]}"
    release = airflow_stack.home / f"release-{run_id}"
    airflow_api.trigger(HELD_DAG, run_id, {"release": str(release), "dedupe_key": "batch-1"})
    try:
        yield {"kind": "task", "dag_id": HELD_DAG, "run_id": run_id, "task_id": "hold", "map_index": -1}
    finally:
        release.touch()


async def _running(held: dict[str, Any], airflow_api: AirflowApi, engine: AsyncEngine) -> dict[str, Any]:
    await wait_for(lambda: events_of(engine, HELD_DAG, held["run_id"]), timeout_s=180, interval=0.5,
                   what="the held attempt's first event")
    ti = airflow_api.task_instance(HELD_DAG, held["run_id"], "hold")
    assert ti["state"] == "running"
    return {**held, "try_number": ti["try_number"], "ti_id": ti["id"]}


def _intrude(airflow_api: AirflowApi, target: dict[str, Any], **conf: Any) -> tuple[str, list[dict[str, str]]]:
    run_id = f"intrude-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(INTRUDER, run_id, {"target": target, **conf})
    assert airflow_api.wait_run(INTRUDER, run_id, timeout_s=300)["state"] == "success"
    outcomes = []
    for index in (0, 1):
        value = airflow_api.get(f"/dags/{INTRUDER}/dagRuns/{run_id}/taskInstances/intrude/xcomEntries/return_value",
                                map_index=index)["value"]
        outcomes.append(json.loads(value) if isinstance(value, str) else value)
    return run_id, outcomes


async def test_code_in_a_worker_gets_no_token_for_another_dag_its_next_try_or_its_sibling(
        held: dict[str, Any], airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    target = await _running(held, airflow_api, stack_engine)
    run_id, outcomes = _intrude(airflow_api, target)
    for index, outcome in enumerate(outcomes):
        assert outcome["sibling_seen"] == "True", outcome
        # the worker credential buys no task token at all in attested mode
        for name in ("other_dag_with_credential", "next_try_with_credential", "sibling_with_credential"):
            assert outcome[name] == "403 attestation_required", (name, outcome)
        # Airflow's channel answers only for the calling task instance (its JWT's subject)
        for name in ("other_dag_through_airflow", "sibling_through_airflow"):
            assert outcome[name].startswith("refused:") and "403" in outcome[name], (name, outcome)
        assert outcome["write_the_reserved_key"].startswith("refused:") and "reserved_key" in \
            outcome["write_the_reserved_key"], outcome
        # what it does get names its own attempt: its dag, its map index, the try Airflow runs
        assert outcome["own_token"] == f"{INTRUDER}/intrude/{index}/1", outcome
    assert await events_of(stack_engine, INTRUDER, run_id) == []
    assert len(await events_of(stack_engine, HELD_DAG, held["run_id"])) == 1  # only its own first emit


async def test_in_credential_mode_the_same_code_gets_the_other_dags_token(
        held: dict[str, Any], airflow_api: AirflowApi, stack_engine: AsyncEngine, credential_api: str) -> None:
    """The limit of `credential` mode (the threat table's row), and what `attested` mode's check removes."""
    target = await _running(held, airflow_api, stack_engine)
    _, outcomes = _intrude(airflow_api, target, api_url=credential_api)
    assert {outcome["other_dag_with_credential"] for outcome in outcomes} == {"200 token"}
    # Airflow's attempt check still refuses a try it has not started
    assert {outcome["next_try_with_credential"] for outcome in outcomes} == {"403 attempt_not_running"}


async def test_a_worker_that_bypasses_the_api_server_gets_no_attested_token(
        airflow_api: AirflowApi, airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    run_id = f"bypass-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(BYPASS, run_id, {"worker_backend": "airflow.providers.common.io.state_store.backend."
                                                           "StateStoreObjectStorageBackend"})
    assert airflow_api.wait_run(BYPASS, run_id, timeout_s=240)["state"] == "success"
    outcome = airflow_api.xcom(BYPASS, run_id, "bypass")
    outcome = json.loads(outcome) if isinstance(outcome, str) else outcome
    assert outcome["code"] == "worker_backend_configured", outcome
    assert "[workers] state_store_backend" in outcome["message"]
    assert airflow_api.xcom(BYPASS, run_id, "control") == "accepted"
    assert [e["task_id"] for e in await events_of(stack_engine, BYPASS, run_id)] == ["control"]
    minted = airflow_stack.log_tail("airflow/api-server", 10_000_000)  # the backend logs every attested token
    assert f"attested token for {BYPASS}/{run_id}/control" in minted
    assert f"attested token for {BYPASS}/{run_id}/bypass" not in minted


def _connection_test(stack: AirflowStack, **env: str) -> str:
    """What the provider's connection test answers (the UI shows it; `airflow connections test` prints it only on
    failure), run as a worker runs it: Airflow's Python, the connection from Airflow's environment backend."""
    connection = json.dumps({"conn_type": "assetbus", "host": stack.api_url, "password": stack.worker_credential})
    code = "from assetbus.producers.airflow.hook import AssetbusHook; print(AssetbusHook().test_connection())"
    done = subprocess.run([str(airflow_bin().parent / "python"), "-c", code], capture_output=True, text=True,
                          env={**stack.airflow.env(), "AIRFLOW_CONN_ASSETBUS_DEFAULT": connection, **env},
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_connection_test_says_which_identity_mode_and_why(airflow_stack: AirflowStack) -> None:
    assert "(True, " in (ok := _connection_test(airflow_stack)) and "identity mode attested (the default" in ok, ok
    bypassed = _connection_test(airflow_stack, AIRFLOW__WORKERS__STATE_STORE_BACKEND="my.WorkerBackend")
    assert "(False, " in bypassed and "[workers] state_store_backend = 'my.WorkerBackend'" in bypassed, bypassed
    credential = _connection_test(airflow_stack, ASSETBUS_AIRFLOW_IDENTITY="credential")
    assert "identity mode credential (ASSETBUS_AIRFLOW_IDENTITY=credential)" in credential, credential


def test_the_api_server_said_at_start_that_its_backend_can_mint(airflow_stack: AirflowStack) -> None:
    started = airflow_stack.log_tail("airflow/api-server", 10_000_000)
    assert "assetbus attested identity: signing key: ok: the API at" in started, started[-3000:]
    assert "assetbus attested identity: assetbus API: ok" in started


@pytest.fixture(scope="module")
def replayed(airflow_api: AirflowApi, airflow_stack: AirflowStack) -> dict[str, Any]:
    """A finished run of `attested_replay`: its id, its attempt's end, and the two tokens it leaked."""
    run_id = f"replay-{uuid.uuid4().hex[:8]}"
    folder = airflow_stack.home / f"tokens-{run_id}"
    folder.mkdir()
    airflow_api.trigger(REPLAY, run_id, {"tokens": str(folder)})
    assert airflow_api.wait_run(REPLAY, run_id, timeout_s=240)["state"] == "success"
    ti = airflow_api.task_instance(REPLAY, run_id, "attempt")
    return {"run_id": run_id, "ended": datetime.fromisoformat(ti["end_date"].replace("Z", "+00:00")).timestamp(),
            "task": (folder / "task.token").read_text(), "callback": (folder / "callback.token").read_text()}


async def test_a_token_replayed_after_its_attempt_and_the_grace_is_refused_on_kafka_and_http(
        replayed: dict[str, Any], airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    run_id, ended = replayed["run_id"], replayed["ended"]
    found = await wait_for(lambda: _by_key(stack_engine, run_id, {"in-task", "in-callback"}), timeout_s=120,
                           interval=0.5, what="the task's and its callback's events")
    # inside its grace the callback emitted once, with its attempt's provenance (Airflow said it had ended)
    assert [(e["source_kind"], e["task_id"], e["try_number"]) for e in found.values()] == [("task", "attempt", 1)] * 2
    grace = int(ATTESTED_LIFETIMES["ASSETBUS_API_AIRFLOW_CALLBACK_GRACE_S"])
    leaked = replayed["callback"]
    claims = unverified_claims(leaked)
    # bound to the attempt: never past its end plus the grace (Airflow's end_date, read by the minter)
    assert claims["attested"] is True and claims["max_exp"] == int(ended) + grace >= claims["exp"]
    task_claims = unverified_claims(replayed["task"])
    assert task_claims["exp"] - task_claims["iat"] == int(ATTESTED_LIFETIMES["ASSETBUS_API_AIRFLOW_ATTESTED_TTL_S"])
    await wait_for(lambda: _after(claims["exp"] + LEEWAY_S + 1), timeout_s=grace + 60, interval=0.5,
                   what="the end of the callback token's grace")
    asset = AssetRef(name="airflow_test.replayed", uri="s3://example/replayed")
    async with AsyncEmitter(airflow_stack.bootstrap_servers, leaked, topics=Topics(prefix=airflow_stack.topic_prefix),
                            receipt_timeout_s=30) as emitter:
        with pytest.raises(AttemptEnded) as refused:
            await emitter.emit(asset, partition_key="replayed", dedupe_key="replayed")
    assert refused.value.receipt.error_code == ErrorCode.ATTEMPT_ENDED
    async with httpx.AsyncClient(base_url=airflow_stack.api_url, timeout=60) as http:
        answer = await http.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {leaked}"},
                                 json={"asset": asset.model_dump(), "partition_key": "replayed"})
    assert (answer.status_code, answer.json()["code"]) == (401, "attempt_ended"), answer.text
    assert len(await events_of(stack_engine, REPLAY, run_id)) == 2


async def _by_key(engine: AsyncEngine, run_id: str, keys: set[str]) -> dict[str, dict[str, Any]] | None:
    events = {e["partition_key"]: e for e in await events_of(engine, REPLAY, run_id)}
    return events if keys <= set(events) else None


async def _after(moment: float) -> bool:
    return time.time() > moment


async def test_a_revoked_worker_credential_is_refused_at_once(
        held: dict[str, Any], airflow_api: AirflowApi, airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    await _running(held, airflow_api, stack_engine)
    credential = airflow_stack.cli("token", "worker", "--deployment", f"revoked-{uuid.uuid4().hex[:6]}").strip()
    dag_run = {"kind": "dag", "dag_id": HELD_DAG, "run_id": held["run_id"]}
    async with httpx.AsyncClient(base_url=airflow_stack.api_url, timeout=60,
                                 headers={"Authorization": f"Bearer {credential}"}) as http:
        assert (await http.post("/airflow/tokens", json=dag_run)).status_code == 200
        printed = airflow_stack.cli("token", "revoke", credential, "--reason", "leaked in a log")
        assert printed.startswith("revoked airflow-worker:revoked-")
        refused = await http.post("/airflow/tokens", json=dag_run)  # the next request: no restart, no new key
    assert (refused.status_code, refused.json()["code"]) == (401, "credential_revoked"), refused.text
    assert "leaked in a log" in refused.json()["message"]


def test_the_minter_decides_the_lifetime_from_the_attested_state(airflow_stack: AirflowStack) -> None:
    """What the api-server's backend would send for three states of one attempt: running, ended within the grace,
    ended long ago (the test signs with the stack's key, as the backend does)."""
    now, grace = int(time.time()), int(ATTESTED_LIFETIMES["ASSETBUS_API_AIRFLOW_CALLBACK_GRACE_S"])
    ttl = int(ATTESTED_LIFETIMES["ASSETBUS_API_AIRFLOW_ATTESTED_TTL_S"])
    attestor = Attestor(airflow_stack.token_secret, airflow_stack.api_url)

    def exchange(state: str, ended_at: int | None) -> httpx.Response:
        attempt = AttestedAttempt(str(uuid.uuid4()), HELD_DAG, "r-lifetimes", "hold", -1, 1, state, ended_at)
        return httpx.post(f"{airflow_stack.api_url}/airflow/tokens", timeout=60,
                          headers={"Authorization": f"Bearer {attestor.attest(attempt)}"},
                          json={"kind": "task", "dag_id": "body-is-ignored", "run_id": "x", "task_id": "y",
                                "try_number": 9, "ti_id": attempt.ti_id})

    running = unverified_claims(exchange("running", None).json()["token"])
    assert (running["dag_id"], running["try_number"], running["attested"]) == (HELD_DAG, 1, True)  # not the body's
    assert running["exp"] - running["iat"] == ttl and "max_exp" not in running
    callback = unverified_claims(exchange("success", now - 5).json()["token"])
    assert callback["max_exp"] == now - 5 + grace and callback["exp"] <= callback["max_exp"]
    late = exchange("failed", now - grace - 1)
    assert (late.status_code, late.json()["code"]) == (403, "attempt_ended"), late.text
    queued = exchange("queued", None)
    assert (queued.status_code, queued.json()["code"]) == (403, "attempt_not_running"), queued.text
