"""Small test helpers: waiting on conditions (never bare sleeps), reading back the database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(condition: Callable[[], Awaitable[T]], *, timeout_s: float = 30.0, interval: float = 0.05,
                   what: str = "condition") -> T:
    """Poll `condition` until it returns a truthy value; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(interval)
