"""A run claim is a lease with a fencing token, kept by PostgreSQL: one holder at a time, a new fence after
the lease expires, and the old holder's renewal and outcome refused. Each is one conditional UPDATE."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.bridge import BridgeLedger
from assetbus.consumers.scheduler import AssetWait, ConsumerDag
from assetbus.consumers.storage.runs import (
    RunClaim,
    claim_run,
    finish_run,
    get_run,
    record_external_run,
    renew_run,
    update_external_state,
)
from assetbus.producers.readiness import Claim, ClaimState, FinishResult, RunStatus
from assetbus.producers.readiness import RunStatus as Outcome
from tests.helpers import wait_for

pytestmark = pytest.mark.integration

DAILY = ConsumerDag(dag_id="daily", schedule=AssetWait("orders"))


@pytest.fixture
async def run(engine: AsyncEngine, define_dags: Callable[..., Awaitable[object]]) -> str:
    await define_dags(DAILY)
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin) "
                                "VALUES ('run-1', 'daily', '2026-10-01', 1, '[]', 'scheduler')"))
    return "run-1"


async def claim(engine: AsyncEngine, run_id: str, consumer: str, lease_s: float = 60) -> RunClaim:
    async with engine.begin() as conn:
        found = await claim_run(conn, run_id, consumer, lease_s)
    assert found is not None
    return found


async def test_a_second_claim_of_a_live_lease_is_refused(engine: AsyncEngine, run: str) -> None:
    first = await claim(engine, run, "a")
    second = await claim(engine, run, "b")
    assert first.claimed and (first.run.attempts, first.run.consumer, first.run.status) == (1, "a", "running")
    assert first.run.lease_until is not None and first.run.lease_until > first.run.started_at  # type: ignore[operator]
    assert not second.claimed and (second.run.attempts, second.run.consumer) == (1, "a")
    async with engine.connect() as conn:
        assert await claim_run(conn, "no-such-run", "a", 60) is None


async def test_a_claim_after_expiry_gets_a_new_fence_and_the_stale_fence_is_refused(engine: AsyncEngine,
                                                                                    run: str) -> None:
    first = await claim(engine, run, "a", lease_s=0.3)

    async def taken_over() -> RunClaim | None:
        found = await claim(engine, run, "b")
        return found if found.claimed else None

    second = await wait_for(taken_over, what="the lapsed lease to be claimed", timeout_s=10)
    assert (first.run.attempts, second.run.attempts, second.run.consumer) == (1, 2, "b")
    async with engine.begin() as conn:
        assert await renew_run(conn, run, first.run.attempts, 60) is None
        assert await finish_run(conn, run, RunStatus.SUCCESS, fence=first.run.attempts) is False
        assert (await get_run(conn, run)).status == "running"  # type: ignore[union-attr]
        assert await finish_run(conn, run, RunStatus.FAILED, "boom", fence=second.run.attempts) is True
        finished = await get_run(conn, run)
        assert await renew_run(conn, run, second.run.attempts, 60) is None
    assert finished is not None and (finished.status, finished.detail, finished.lease_until) == ("failed", "boom", None)
    assert not (await claim(engine, run, "c")).claimed


async def test_a_renewal_extends_the_lease_of_its_fence(engine: AsyncEngine, run: str) -> None:
    held = await claim(engine, run, "a", lease_s=5)
    async with engine.begin() as conn:
        renewed = await renew_run(conn, run, held.run.attempts, 600)
    assert renewed is not None and held.run.lease_until is not None
    assert (renewed - held.run.lease_until).total_seconds() > 500
    assert not (await claim(engine, run, "b")).claimed


async def test_claims_racing_on_many_connections_give_the_run_to_one(engine: AsyncEngine, run: str) -> None:
    answers = await asyncio.gather(*(claim(engine, run, f"c{i}") for i in range(8)))
    winners = [a for a in answers if a.claimed]
    assert len(winners) == 1 and winners[0].run.attempts == 1


async def test_the_bridge_hands_a_run_to_airflow_and_releases_its_lease(db_url: str, engine: AsyncEngine,
                                                                       run: str) -> None:
    ledger = BridgeLedger(db_url, lease_s=600)
    try:
        held = await ledger.claim(run, "airflow-bridge")
        assert await ledger.finish(run, held.fence, Outcome.SUCCESS) is FinishResult.RECORDED
        async with engine.connect() as conn:
            handed = await get_run(conn, run)
        assert handed is not None and handed.status == "running"  # until Airflow's outcome comes back
        again = await ledger.claim(run, "airflow-bridge")  # a redelivered signal: meets the Airflow run
        assert (held, again) == (Claim(ClaimState.CLAIMED, 1), Claim(ClaimState.CLAIMED, 2))
        assert await ledger.finish(run, held.fence, Outcome.FAILED, "late") is FinishResult.STALE_FENCE
    finally:
        await ledger.stop()


async def test_the_orchestrators_state_is_noted_and_its_outcome_finishes_the_run(engine: AsyncEngine, run: str) -> None:
    await claim(engine, run, "bridge")
    async with engine.begin() as conn:
        assert await record_external_run(conn, run, "manual__1", "queued", "bridge")
        assert await update_external_state(conn, run, "running")
        noted = await get_run(conn, run)
        assert await update_external_state(conn, run, "failed", Outcome.FAILED, "task x failed")
        finished = await get_run(conn, run)
        assert not await update_external_state(conn, run, "success", Outcome.SUCCESS)  # finished: nothing changes
    assert noted is not None and (noted.status, noted.external_state, noted.finished_at) == ("running", "running", None)
    assert finished is not None and (finished.status, finished.external_state, finished.detail) == (
        "failed", "failed", "task x failed")
    assert finished.finished_at is not None
