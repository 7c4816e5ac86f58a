"""`DatabaseLedger`: a subscriber's run ledger straight on `consumer_runs`, for processes that hold the database.

The SDK's `ApiLedger` (downstream services) reaches the same two storage functions through the
execution API. A claim is one atomic UPDATE, so a re-published signal, a second subscriber process
or a restarted one never runs a finished run again, and `assetbus runs list` shows each run's outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.faults import storage_unavailable
from assetbus.consumers.storage import create_engine, translated
from assetbus.consumers.storage.runs import RunStatus as StoredStatus
from assetbus.consumers.storage.runs import claim_run, finish_run
from assetbus.producers.kafka.retry import RetryPolicy, retry_until
from assetbus.producers.readiness import RunStatus

log = logging.getLogger("assetbus.readiness")


class DatabaseLedger:
    """Claims and outcomes in PostgreSQL; waits (with back-off) while the database is unavailable."""

    def __init__(self, database_url: str | None = None, *, engine: AsyncEngine | None = None,
                 backoff_initial_s: float = 0.2, backoff_max_s: float = 5.0) -> None:
        if engine is None and database_url is None:
            raise ValueError("DatabaseLedger needs a database_url or an engine")
        self._owned = engine is None
        self._engine = engine if engine is not None else create_engine(database_url or "", pool_size=2)
        self._retry = RetryPolicy(initial_s=backoff_initial_s, max_s=backoff_max_s)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        if self._owned:
            await self._engine.dispose()

    async def claim(self, run_id: str, consumer: str) -> bool:
        async def go() -> bool:
            async with translated(), self._engine.begin() as conn:
                return await claim_run(conn, run_id, consumer) is not None
        return await self._retrying(go)

    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None:
        async def go() -> bool:
            async with translated(), self._engine.begin() as conn:
                return await finish_run(conn, run_id, StoredStatus(status.value), detail)
        if not await self._retrying(go):
            log.warning("run %s was not running when its outcome %s was reported", run_id, status.value)

    async def _retrying(self, operation: Callable[[], Awaitable[bool]]) -> bool:
        return await retry_until(operation, self._retry, what="the database", retriable=storage_unavailable, log=log)

