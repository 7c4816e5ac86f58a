"""Background work of the services: the one periodic loop (`every`: run an action every interval until
cancelled, a failure logged and tried again) and `run_async` (a coroutine to its end from sync code).

A failure is logged once per kind in a row (not once per round while a dependency is away), and its recovery
once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from assetbus.producers.kafka.access import AccessRefusals

__all__ = ["cancel_and_wait", "every", "run_async"]

T = TypeVar("T")


def every(interval_s: float, action: Callable[[], Awaitable[Any]], *, what: str, log: logging.Logger,
          first_after_s: float | None = None, stack: AsyncExitStack | None = None,
          refusals: AccessRefusals | None = None, while_: Callable[[], bool] | None = None) -> asyncio.Task[None]:
    """Run `action` every `interval_s` (the first time after `first_after_s`, default one interval) in a task.
    With `stack`, the task is cancelled and awaited when the stack closes; with `refusals`, a round the cluster's
    authorizer refuses is recorded there under `what` (`/readyz` names the missing ACL), and cleared by the next
    round that succeeds; with `while_`, the task ends at a round that finds it false."""

    async def loop() -> None:
        failing: str | None = None
        await asyncio.sleep(interval_s if first_after_s is None else first_after_s)
        while while_ is None or while_():
            try:
                await action()
            except Exception as error:
                if refusals is not None:
                    refusals.noted(what, error)
                kind = type(error).__name__
                if kind != failing:
                    log.warning("%s failed, trying again every %.1fs: %s: %s", what, interval_s, kind, error)
                failing = kind
            else:
                if refusals is not None:
                    refusals.noted(what, None)
                if failing is not None:
                    log.info("%s works again", what)
                failing = None
            await asyncio.sleep(interval_s)

    task = asyncio.create_task(loop(), name=f"assetbus-{what.replace(' ', '-')}")
    if stack is not None:
        stack.push_async_callback(cancel_and_wait, task)
    return task


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel a background task and wait until it has ended (None: nothing to do)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also when the caller already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
