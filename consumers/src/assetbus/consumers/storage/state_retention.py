"""Retention of task state, as Airflow 3.3's `MetastoreBackend.cleanup()`: delete the rows whose
`expires_at` has passed, optionally in batches of one transaction each; rows without an expiry stay.

`periodic_cleanup` runs it in the API service (`ASSETBUS_API_STATE_CLEANUP_INTERVAL_S`, hourly by
default); `assetbus state cleanup` runs one pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage.state import delete_expired_task_state
from assetbus.producers.kafka.background import in_background

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


async def cleanup_periodically(engine: AsyncEngine, interval_s: float, *, batch_size: int = 0) -> None:
    """Run a cleanup pass every `interval_s` until cancelled; a failed pass is logged and retried next time."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            deleted = await delete_expired_state(engine, batch_size=batch_size)
        except (StorageUnavailable, OSError) as error:
            log.warning("state cleanup failed, retrying in %.0f s: %s", interval_s, error)
            continue
        except Exception:  # a bug in one pass must not stop the service's cleanup
            log.exception("state cleanup failed")
            continue
        if deleted:
            log.info("deleted %d expired task state rows", deleted)


@contextlib.asynccontextmanager
async def periodic_cleanup(engine: AsyncEngine, interval_s: float | None, *, batch_size: int = 0
                           ) -> AsyncIterator[None]:
    """`cleanup_periodically` in the background while the block runs (not at all if `interval_s` is None);
    cancelled and awaited on exit."""
    if interval_s is None:
        yield
        return
    async with in_background(cleanup_periodically(engine, interval_s, batch_size=batch_size),
                             name="assetbus-state-cleanup"):
        yield
