"""Retention of task state, as Airflow 3.3's `MetastoreBackend.cleanup()`: delete the rows whose
`expires_at` has passed, optionally in batches of one transaction each; rows without an expiry stay.

`cleanup_periodically` is the API service's background task (`ASSETBUS_API_STATE_CLEANUP_INTERVAL_S`);
`assetbus state cleanup` runs one pass.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.errors import StorageUnavailable
from assetbus.consumers.storage.state import delete_expired_task_state

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
