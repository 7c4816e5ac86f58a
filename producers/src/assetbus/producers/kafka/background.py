"""A coroutine in the background while a block runs: started on entry, cancelled and awaited on exit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

__all__ = ["in_background"]


@contextlib.asynccontextmanager
async def in_background(work: Coroutine[Any, Any, None], *, name: str) -> AsyncIterator[None]:
    """Run `work` as a task named `name` while the block runs; on exit, cancel it and wait until it has
    ended, so no task outlives its owner."""
    task = asyncio.create_task(work, name=name)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
