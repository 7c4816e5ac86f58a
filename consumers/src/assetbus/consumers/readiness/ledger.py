"""`DatabaseLedger`: a subscriber's run ledger straight on `consumer_runs`, for processes that hold the database
(the SDK's `ApiLedger` reaches the same functions through the execution API). With `storage.runs`' leases and
fences, a re-published signal, a second or a restarted subscriber never runs a finished run again, nor one
another holder's live lease covers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.faults import storage_unavailable
from assetbus.consumers.storage import create_engine, translated
from assetbus.consumers.storage.runs import claim_run, finish_run, renew_run
from assetbus.producers.kafka.retry import RetryPolicy, retry_until
from assetbus.producers.readiness import DEFAULT_LEASE_S, FINISHED, Claim, ClaimState, FinishResult, RunStatus

log = logging.getLogger("assetbus.readiness")

T = TypeVar("T")


class DatabaseLedger:
    """Claims and outcomes in PostgreSQL; waits (with back-off) while the database is unavailable."""

    def __init__(self, database_url: str | None = None, *, engine: AsyncEngine | None = None,
                 backoff_initial_s: float = 0.2, backoff_max_s: float = 5.0, lease_s: float = DEFAULT_LEASE_S) -> None:
        if engine is None and database_url is None:
            raise ValueError("DatabaseLedger needs a database_url or an engine")
        self._owned = engine is None
        self._engine = engine if engine is not None else create_engine(database_url or "", pool_size=2)
        self._retry = RetryPolicy(initial_s=backoff_initial_s, max_s=backoff_max_s)
        self.lease_s = lease_s

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        if self._owned:
            await self._engine.dispose()

    async def claim(self, run_id: str, consumer: str) -> Claim:
        found = await self._run(lambda conn: claim_run(conn, run_id, consumer, self.lease_s))
        if found is None:
            return Claim(ClaimState.UNKNOWN)
        if found.claimed:
            return Claim(ClaimState.CLAIMED, found.run.attempts)
        return Claim(ClaimState.FINISHED if RunStatus(found.run.status) in FINISHED else ClaimState.HELD)

    async def renew(self, run_id: str, fence: int) -> bool:
        return await self._run(lambda conn: renew_run(conn, run_id, fence, self.lease_s)) is not None

    async def release(self, run_id: str, fence: int) -> bool:
        """End the lease of `fence` now, leaving the run `running` (its outcome comes from elsewhere): the next
        claim takes it at once. False: that fence no longer holds the run."""
        return await self._run(lambda conn: renew_run(conn, run_id, fence, 0)) is not None

    async def finish(self, run_id: str, fence: int, status: RunStatus, detail: str | None = None) -> FinishResult:
        recorded = await self._run(lambda conn: finish_run(conn, run_id, status, detail, fence=fence))
        return FinishResult.RECORDED if recorded else FinishResult.STALE_FENCE

    async def _run(self, statement: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """`statement` in a transaction of its own, tried again while the database is unavailable."""
        async def go() -> T:
            async with translated(), self._engine.begin() as conn:
                return await statement(conn)
        return await retry_until(go, self._retry, what="the database", retriable=storage_unavailable, log=log)
