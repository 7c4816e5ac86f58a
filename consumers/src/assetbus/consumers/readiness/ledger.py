"""Run ledgers: where a subscriber claims a run before its handler and records the outcome after.

`DatabaseLedger` (the default for services) uses the `consumer_runs` table through the storage
layer: a claim is one atomic UPDATE, so a re-published signal, a second subscriber process or a
restarted one never runs a finished run again, and `assetbus runs list` shows each run's outcome.
`MemoryLedger` dedupes within one process only (tests, scripts without a database).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.faults import storage_unavailable
from assetbus.consumers.storage import create_engine, translated
from assetbus.consumers.storage.runs import RunStatus, claim_run, finish_run
from assetbus.producers.kafka.retry import RetryPolicy, retry_until

log = logging.getLogger("assetbus.readiness")


class RunLedger(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def claim(self, run_id: str, consumer: str) -> bool:
        """True: run the handler. False: the run has finished already (or is unknown): skip it."""
        ...
    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None: ...


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
                return await finish_run(conn, run_id, status, detail)
        if not await self._retrying(go):
            log.warning("run %s was not running when its outcome %s was reported", run_id, status.value)

    async def _retrying(self, operation: Callable[[], Awaitable[bool]]) -> bool:
        return await retry_until(operation, self._retry, what="the database", retriable=storage_unavailable, log=log)


class MemoryLedger:
    """Dedupe by run id within this process; outcomes are kept in `outcomes`."""

    def __init__(self) -> None:
        self.outcomes: dict[str, RunStatus] = {}

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def claim(self, run_id: str, consumer: str) -> bool:
        if self.outcomes.get(run_id) in (RunStatus.SUCCESS, RunStatus.FAILED):
            return False
        self.outcomes[run_id] = RunStatus.RUNNING
        return True

    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None:
        self.outcomes[run_id] = status
