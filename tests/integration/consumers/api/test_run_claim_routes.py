"""`POST /execution/runs/{run_id}/claim` and `.../finish` on the real database: the once-per-run claim of
downstream subscribers, and who may make it (a subscriber token of the run's own DAG, nothing else)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api.routes.runs import subscriber_token
from assetbus.consumers.api.ui_auth import operator_token
from assetbus.consumers.scheduler import AssetWait, ConsumerDag
from assetbus.consumers.storage.runs import get_run
from assetbus.producers import task_token

pytestmark = pytest.mark.integration

DAILY = ConsumerDag(dag_id="daily", schedule=AssetWait("orders"))
WEEKLY = ConsumerDag(dag_id="weekly", schedule=AssetWait("orders"))


@pytest.fixture
async def runs(engine: AsyncEngine, define_dags: Callable[..., Awaitable[object]]) -> None:
    await define_dags(DAILY, WEEKLY)
    async with engine.begin() as conn:
        for run_id, dag_id in (("run-d", "daily"), ("run-w", "weekly")):
            await conn.execute(text("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, "
                                    "origin) VALUES (:r, :d, '2026-10-01', 1, '[]', 'scheduler')"),
                               {"r": run_id, "d": dag_id})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_run_is_claimed_until_it_finishes_and_then_never_again(
        api_client: httpx.AsyncClient, engine: AsyncEngine, token_secret: str, runs: None) -> None:
    auth = bearer(subscriber_token(token_secret, "daily", "svc"))
    first = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "svc"}, headers=auth)
    assert first.status_code == 200, first.text
    assert first.json() == {"claimed": True, "status": "running", "attempts": 1}
    again = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "svc"}, headers=auth)
    assert again.json() == {"claimed": True, "status": "running", "attempts": 2}  # a restart mid-handler

    done = await api_client.post("/execution/runs/run-d/finish", json={"status": "success"}, headers=auth)
    assert done.json() == {"recorded": True}
    repeat = await api_client.post("/execution/runs/run-d/finish", json={"status": "failed"}, headers=auth)
    assert repeat.json() == {"recorded": False}
    after = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "svc"}, headers=auth)
    assert after.json() == {"claimed": False, "status": "success", "attempts": 2}
    async with engine.connect() as conn:
        stored = await get_run(conn, "run-d")
    assert stored is not None and (stored.status, stored.consumer) == ("success", "svc")


async def test_only_a_subscriber_token_of_the_runs_dag_may_claim_it(
        api_client: httpx.AsyncClient, engine: AsyncEngine, token_secret: str, runs: None) -> None:
    body = {"consumer": "svc"}
    other_dag = await api_client.post("/execution/runs/run-w/claim", json=body,
                                      headers=bearer(subscriber_token(token_secret, "daily", "svc")))
    assert other_dag.status_code == 403 and "weekly" in other_dag.text
    emitter = await api_client.post("/execution/runs/run-d/claim", json=body,
                                    headers=bearer(task_token(token_secret, "daily", "r1", "t1")))
    assert emitter.status_code == 403 and "runs:claim" in emitter.text
    operator = await api_client.post("/execution/runs/run-d/claim", json=body,
                                     headers=bearer(operator_token(token_secret, "alice")))
    assert operator.status_code == 403
    forged = await api_client.post("/execution/runs/run-d/claim", json=body,
                                   headers=bearer(subscriber_token("another-secret-of-32-bytes-or-more", "daily", "x")))
    assert forged.status_code == 401
    missing = await api_client.post("/execution/runs/run-d/claim", json=body)
    assert missing.status_code == 401
    unknown = await api_client.post("/execution/runs/nope/claim", json=body,
                                    headers=bearer(subscriber_token(token_secret, "daily", "svc")))
    assert unknown.status_code == 404
    async with engine.connect() as conn:
        untouched = [await get_run(conn, r) for r in ("run-d", "run-w")]
    assert [(r.status, r.attempts) for r in untouched if r is not None] == [("queued", 0), ("queued", 0)]
