"""Knowing a running attempt's ids is not enough to emit as it (docs/security.md, "Airflow attempts").

One run of `held_attempt` stays running between two emits. Meanwhile an attacker who can read Airflow
(a second account with the viewer role), or who has no Airflow account at all, tries every way to get a
token for that attempt or its DAG run and to emit as it. Each try is refused; nothing is stored; and the
attempt's own emit under the dedupe key the attacker tried to squat answers `accepted`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow import VIEWER
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import task_token
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import events_of

DAG = "held_attempt"
HELD = {"name": "airflow_test.held", "uri": "s3://example/held"}
SQUATTED = "batch-1"


@dataclass(frozen=True)
class HeldRun:
    run_id: str
    release: Path


@pytest.fixture(scope="module")
def held_run(airflow_api: AirflowApi, airflow_stack: AirflowStack) -> Iterator[HeldRun]:
    """A run whose task has emitted its first event and now waits for `release` before its second."""
    run_id = f"held-{uuid.uuid4().hex[:8]}"
    release = airflow_stack.home / f"release-{run_id}"
    airflow_api.trigger(DAG, run_id, {"release": str(release), "dedupe_key": SQUATTED})
    try:
        yield HeldRun(run_id, release)
    finally:
        release.touch()


async def _first_emitted(engine: AsyncEngine, run: HeldRun) -> list[dict[str, Any]]:
    return await wait_for(lambda: events_of(engine, DAG, run.run_id), timeout_s=180, interval=0.5,
                          what="the held attempt's first event")


def _viewer(stack: AirflowStack) -> httpx.Client:
    """Airflow's REST API as the viewer-role account."""
    return httpx.Client(base_url=f"{stack.airflow.url}/api/v2", timeout=60,
                        headers={"Authorization": f"Bearer {stack.airflow.token(VIEWER)}"})


async def _try_to_emit_as(stack: AirflowStack, body: dict[str, Any], **headers: str) -> httpx.Response:
    """What an attacker does: ask for a token, and if one comes back, emit under the squatted dedupe key."""
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=60) as http:
        answer = await http.post("/airflow/tokens", json=body, headers=headers)
        if answer.status_code == 200:
            forged = {"Authorization": f"Bearer {answer.json()['token']}"}
            await http.post("/execution/asset-events/emit", headers=forged,
                            json={"asset": HELD, "partition_key": "forged", "dedupe_key": SQUATTED})
    return answer


async def test_a_viewer_reads_the_running_attempt_and_still_gets_no_token(
        held_run: HeldRun, airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    await _first_emitted(stack_engine, held_run)
    with _viewer(airflow_stack) as viewer:
        ti = viewer.get(f"/dags/{DAG}/dagRuns/{quote(held_run.run_id, safe='')}/taskInstances/hold").json()
        assert ti["state"] == "running"  # what Airflow shows any reader
        airflow_jwt = viewer.headers["Authorization"]
    task = {"kind": "task", "dag_id": DAG, "run_id": held_run.run_id, "task_id": "hold", "map_index": -1,
            "try_number": ti["try_number"], "ti_id": ti["id"]}
    dag = {"kind": "dag", "dag_id": DAG, "run_id": held_run.run_id}
    for body in (task, dag):
        bare = await _try_to_emit_as(airflow_stack, body)
        assert (bare.status_code, bare.json()["code"]) == (401, "missing_token"), bare.text
        with_airflow_jwt = await _try_to_emit_as(airflow_stack, body, Authorization=airflow_jwt)
        assert (with_airflow_jwt.status_code, with_airflow_jwt.json()["code"]) == (401, "invalid_token")
    async with httpx.AsyncClient(base_url=airflow_stack.api_url, timeout=60) as http:
        direct = await http.post("/execution/asset-events/emit",
                                 json={"asset": HELD, "partition_key": "forged", "dedupe_key": SQUATTED})
    assert (direct.status_code, direct.json()["code"]) == (401, "missing_token")


def test_a_viewer_cannot_read_the_worker_credential(airflow_stack: AirflowStack) -> None:
    with _viewer(airflow_stack) as viewer:
        assert viewer.get("/connections/assetbus_default").status_code == 403
        assert viewer.get("/connections").status_code == 403


async def test_no_airflow_account_guessed_or_listed_run_ids_get_no_dag_run_token(
        held_run: HeldRun, airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    await _first_emitted(stack_engine, held_run)
    async with httpx.AsyncClient(base_url=airflow_stack.api_url, timeout=60) as http:
        listed = await http.get("/ui/api/events", params={"asset": HELD["name"]})
    # the operator page lists run ids only to an operator token: an anonymous caller reads none
    assert (listed.status_code, listed.json()["code"]) == (401, "missing_token"), listed.text
    # and a run id known anyway (guessed, or the real one read elsewhere) buys no token without the credential
    guessed = {"scheduled__2026-01-01T00:00:00+00:00", "manual__2026-01-01T00:00:00+00:00", held_run.run_id}
    for run_id in guessed:
        answer = await _try_to_emit_as(airflow_stack, {"kind": "dag", "dag_id": DAG, "run_id": run_id})
        assert (answer.status_code, answer.json()["code"]) == (401, "missing_token"), (run_id, answer.text)


async def test_a_token_without_the_worker_scope_gets_no_token(
        held_run: HeldRun, airflow_stack: AirflowStack, stack_engine: AsyncEngine) -> None:
    """A task's own emitter token (scope `emit ti:self`) is not a worker credential."""
    await _first_emitted(stack_engine, held_run)
    emitter = task_token(airflow_stack.token_secret, "upstream_feed", "r1", "load")
    answer = await _try_to_emit_as(airflow_stack, {"kind": "dag", "dag_id": DAG, "run_id": held_run.run_id},
                             Authorization=f"Bearer {emitter}")
    assert (answer.status_code, answer.json()["code"]) == (403, "insufficient_scope")


async def test_the_worker_credential_itself_can_neither_emit_nor_touch_state(
        held_run: HeldRun, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    await _first_emitted(stack_engine, held_run)
    ti = airflow_api.task_instance(DAG, held_run.run_id, "hold")
    worker = {"Authorization": f"Bearer {airflow_stack.worker_credential}"}
    async with httpx.AsyncClient(base_url=airflow_stack.api_url, timeout=60, headers=worker) as http:
        emit = await http.post("/execution/asset-events/emit",
                               json={"asset": HELD, "partition_key": "forged", "dedupe_key": SQUATTED})
        assert (emit.status_code, emit.json()["code"]) == (403, "insufficient_scope")
        state = await http.get(f"/execution/store/ti/{ti['id']}/checkpoint")
        assert (state.status_code, state.json()["detail"]["reason"]) == (403, "not_a_task_token")
        next_try = await http.post("/airflow/tokens", json={
            "kind": "task", "dag_id": DAG, "run_id": held_run.run_id, "task_id": "hold", "map_index": -1,
            "try_number": ti["try_number"] + 1, "ti_id": ti["id"]})  # a try Airflow has not started
        # attested mode: the credential buys no task token at all (test_attested_identity.py)
        assert (next_try.status_code, next_try.json()["code"]) == (403, "attestation_required")


async def test_the_attempts_own_emit_is_accepted_not_a_duplicate_of_a_forged_one(
        held_run: HeldRun, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    before = await _first_emitted(stack_engine, held_run)
    assert len(before) == 1  # every try above stored nothing
    held_run.release.touch()
    run = airflow_api.wait_run(DAG, held_run.run_id)
    print(f"first emit() in the task: {airflow_api.xcom(DAG, held_run.run_id, 'hold', 'first_emit_ms')} ms")
    assert run["state"] == "success"
    assert airflow_api.xcom(DAG, held_run.run_id, "hold", "second_status") == "accepted"
    events = await events_of(stack_engine, DAG, held_run.run_id)
    assert [(e["partition_key"], e["dedupe_key"], e["source_kind"], e["task_id"], e["try_number"])
            for e in events][1:] == [("second", SQUATTED, "task", "hold", 1)]
    assert len(events) == 2 and events[0]["partition_key"] == "first"
