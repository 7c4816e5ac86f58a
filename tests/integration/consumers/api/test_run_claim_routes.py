"""`POST /execution/runs/{run_id}/claim`, `.../renew` and `.../finish` on the real database: the leased,
fenced claim of downstream subscribers, and who may make it (a subscriber token of the run's own DAG)."""

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
from tests.helpers import wait_for

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


def without_lease_time(answer: dict[str, object]) -> dict[str, object]:
    assert answer.pop("lease_until") is not None
    return answer


async def test_a_run_is_claimed_until_it_finishes_and_then_never_again(
        api_client: httpx.AsyncClient, engine: AsyncEngine, token_secret: str, runs: None) -> None:
    auth = bearer(subscriber_token(token_secret, "daily", "svc"))
    first = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "svc"}, headers=auth)
    assert first.status_code == 200, first.text
    assert without_lease_time(first.json()) == {"claimed": True, "status": "running", "attempts": 1, "fence": 1}
    again = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "other"}, headers=auth)
    assert without_lease_time(again.json()) == {"claimed": False, "status": "running", "attempts": 1, "fence": None}

    done = await api_client.post("/execution/runs/run-d/finish", json={"status": "success", "fence": 1}, headers=auth)
    assert done.json() == {"recorded": True, "reason": None}
    repeat = await api_client.post("/execution/runs/run-d/finish", json={"status": "failed", "fence": 1}, headers=auth)
    assert repeat.json() == {"recorded": False, "reason": "stale_fence"}
    after = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "svc"}, headers=auth)
    assert after.json() == {"claimed": False, "status": "success", "attempts": 1, "fence": None, "lease_until": None}
    async with engine.connect() as conn:
        stored = await get_run(conn, "run-d")
    assert stored is not None and (stored.status, stored.consumer) == ("success", "svc")


async def test_a_lapsed_lease_is_claimed_with_a_new_fence_and_the_old_fence_is_refused(
        api_client: httpx.AsyncClient, token_secret: str, runs: None) -> None:
    auth = bearer(subscriber_token(token_secret, "daily", "svc"))
    first = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "a", "lease_s": 1}, headers=auth)
    assert first.json()["fence"] == 1
    renewed = await api_client.post("/execution/runs/run-d/renew", json={"fence": 1, "lease_s": 1}, headers=auth)
    assert renewed.status_code == 200 and renewed.json()["renewed"] is True, renewed.text

    async def taken_over() -> dict[str, object] | None:
        answer = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "b"}, headers=auth)
        body: dict[str, object] = answer.json()
        return body if body["claimed"] else None

    second = await wait_for(taken_over, what="the lapsed lease to be claimed", timeout_s=10)
    assert (second["fence"], second["attempts"]) == (2, 2)
    stale_renewal = await api_client.post("/execution/runs/run-d/renew", json={"fence": 1}, headers=auth)
    assert stale_renewal.json() == {"renewed": False, "lease_until": None}
    stale = await api_client.post("/execution/runs/run-d/finish", json={"status": "success", "fence": 1},
                                  headers=auth)
    assert stale.json() == {"recorded": False, "reason": "stale_fence"}
    current = await api_client.post("/execution/runs/run-d/finish", json={"status": "success", "fence": 2},
                                    headers=auth)
    assert current.json() == {"recorded": True, "reason": None}
    bad = await api_client.post("/execution/runs/run-d/claim", json={"consumer": "b", "lease_s": 0}, headers=auth)
    assert bad.status_code == 422
    other_dag = await api_client.post("/execution/runs/run-w/renew", json={"fence": 1},
                                      headers=bearer(subscriber_token(token_secret, "weekly", "svc")))
    assert other_dag.json() == {"renewed": False, "lease_until": None}  # its own DAG's run, never claimed


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
