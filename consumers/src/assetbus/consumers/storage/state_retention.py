"""Retention of task state, as Airflow 3.3's `MetastoreBackend.cleanup()`: delete the rows whose
`expires_at` has passed, optionally in batches of one transaction each; rows without an expiry stay.

`periodic_cleanup` runs it in the API service (`ASSETBUS_API_STATE_CLEANUP_INTERVAL_S`, hourly by
default); `assetbus state cleanup` runs one pass.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage.state import delete_expired_task_state
from assetbus.producers.kafka.periodic import every

log = logging.getLogger("assetbus.state.retention")


async def delete_expired_state(engine: AsyncEngine, *, batch_size: int = 0) -> int:
    """One cleanup pass: every expired row, `batch_size` per transaction (0: all in one). Returns the count."""
    total = 0
    while True:
        async with engine.begin() as conn:
            deleted = await delete_expired_task_state(conn, limit=batch_size)
        total += deleted
        if batch_size <= 0 or deleted < batch_size:
            return total


async def _cleanup_pass(engine: AsyncEngine, batch_size: int) -> None:
    deleted = await delete_expired_state(engine, batch_size=batch_size)
    if deleted:
        log.info("deleted %d expired task state rows", deleted)


@contextlib.asynccontextmanager
async def periodic_cleanup(engine: AsyncEngine, interval_s: float | None, *, batch_size: int = 0
                           ) -> AsyncIterator[None]:
    """A cleanup pass every `interval_s` in the background while the block runs (not at all if `interval_s` is
    None), on the toolkit's periodic loop: a failed pass is logged and tried again next time."""
    async with contextlib.AsyncExitStack() as stack:
        if interval_s is not None:
            every(interval_s, lambda: _cleanup_pass(engine, batch_size), what="state cleanup", log=log, stack=stack)
        yield
