"""Resources made before a test asks for them and thrown away after it, off the test's own time.

A fresh database (a clone of the migrated template) and a fresh topic prefix (its core topics
created) cost 0.3-2 s each to make and as much to drop, mostly PostgreSQL's checkpoint on DROP
DATABASE and Kafka's metadata round trips. Two hundred tests take both, so `AheadPool` makes the
next few on a thread of its own while the current test runs, and drops the used ones there too.
Each test still gets its own database and prefix, never one another test touched.

`close()` runs in the last test's teardown, so it is bounded: a drop still running after `close_s`
(a broker or server that stopped answering) is left behind with a warning that names the item and
where its drop waits, instead of holding the session until pytest-timeout fails a passed test.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import warnings
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class AheadPool(Generic[T]):
    """`await pool.take()` a fresh item; `pool.discard(item)` when done; `close()` drains the drops."""

    def __init__(self, name: str, make: Callable[[], Coroutine[Any, Any, T]],
                 drop: Callable[[T], Coroutine[Any, Any, None]], *,
                 ahead: int = 2) -> None:
        self._make, self._drop = make, drop
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"ahead-{name}", daemon=True)
        self._thread.start()
        self._ready: asyncio.Queue[T | Exception] = self._call(self._queue(ahead)).result()
        self._filler = self._call(self._fill())
        self._drops: list[concurrent.futures.Future[None]] = []

    def _call(self, coroutine: Coroutine[Any, Any, R]) -> concurrent.futures.Future[R]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    @staticmethod
    async def _queue(ahead: int) -> asyncio.Queue[T | Exception]:
        return asyncio.Queue(maxsize=ahead)

    async def _fill(self) -> None:
        while True:
            try:
                item: T | Exception = await self._make()
            except Exception as error:  # the broker or database was away: the test that takes it fails
                item = error
            try:
                await self._ready.put(item)
            except asyncio.CancelledError:  # `close()`: the item in hand is dropped as a discarded one, so that
                if not isinstance(item, Exception):  # close() waits for it and raises its failure (dropped here,
                    self.discard(item)  # a failure ended this task unseen and was logged at garbage collection)
                raise

    async def _leftovers(self) -> list[T]:
        items: list[T] = []
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if not isinstance(item, Exception):
                items.append(item)
        return items

    async def take(self) -> T:
        """The next fresh item (made ahead, or as soon as it is made); a failure to make it is raised here."""
        item = await asyncio.wrap_future(self._call(self._ready.get()))
        if isinstance(item, Exception):
            raise item
        return item

    def discard(self, item: T) -> None:
        """Drop `item` in the background; its failure is raised by `close()`."""
        self._drops.append(self._call(self._named_drop(item)))

    async def _named_drop(self, item: T) -> None:
        task = asyncio.current_task()
        if task is not None:  # named for the warning of `close()`
            task.set_name(f"drop {item!r}")
        await self._drop(item)

    def close(self, close_s: float = 120.0) -> None:
        """Drop what was made and not taken, wait up to `close_s` for every drop, stop the thread. A failed
        drop is raised; one still running at the deadline is left behind with a `LeftBehind` warning."""
        deadline = time.monotonic() + close_s
        self._filler.cancel()
        try:
            for item in self._call(self._leftovers()).result(timeout=close_s):
                self.discard(item)
            _, running = concurrent.futures.wait(self._drops, timeout=max(0.0, deadline - time.monotonic()))
            if running:
                warnings.warn(LeftBehind(f"{self._thread.name}: {len(running)} drop(s) still running after "
                                         f"{close_s:.0f}s, left behind:\n{self._where_waiting()}"), stacklevel=2)
            for dropping in self._drops:
                if dropping not in running:
                    dropping.result()
        finally:
            try:
                self._call(_cancel_the_rest()).result(timeout=10)
            except concurrent.futures.TimeoutError:
                pass  # the loop is blocked: the thread is a daemon and dies with the session
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self._loop.close()

    def _where_waiting(self) -> str:
        """Each unfinished task of the pool's loop with the chain of coroutines it waits in, innermost last."""
        async def stacks() -> str:
            return "\n".join(f"  {task.get_name()}: {' -> '.join(_awaiting(task.get_coro()))}"
                             for task in asyncio.all_tasks() if task is not asyncio.current_task())
        try:
            return self._call(stacks()).result(timeout=5)
        except concurrent.futures.TimeoutError:
            return "  (the pool's loop is blocked: no task could be inspected)"


async def _cancel_the_rest() -> None:
    """Cancel every other task of the running loop (the filler, drops left behind) and let them unwind."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    if others:
        await asyncio.wait(others, timeout=5)


def _awaiting(awaitable: Any) -> list[str]:
    """The coroutines `awaitable` waits through (`cr_await`), each as "name (file:line)"."""
    chain = []
    while awaitable is not None and (frame := getattr(awaitable, "cr_frame", None)) is not None:
        chain.append(f"{frame.f_code.co_name} ({frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")
        awaitable = getattr(awaitable, "cr_await", None)
    return chain


class LeftBehind(UserWarning):
    """A pool's drop did not finish by the end of the session: that item was left on the broker or server."""
