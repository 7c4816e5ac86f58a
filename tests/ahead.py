"""Resources made before a test asks for them and thrown away after it, off the test's own time.

A fresh database (a clone of the migrated template) and a fresh topic prefix (its core topics
created) cost 0.3-2 s each to make and as much to drop, mostly PostgreSQL's checkpoint on DROP
DATABASE and Kafka's metadata round trips. Two hundred tests take both, so `AheadPool` makes the
next few on a thread of its own while the current test runs, and drops the used ones there too.
Each test still gets its own database and prefix, never one another test touched.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
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
            except asyncio.CancelledError:
                if not isinstance(item, Exception):
                    await self._drop(item)
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
        self._drops.append(self._call(self._drop(item)))

    def close(self) -> None:
        """Wait for every drop, drop what was made and not taken, stop the thread."""
        self._filler.cancel()
        try:
            concurrent.futures.wait([self._filler])
            for item in self._call(self._leftovers()).result():
                self.discard(item)
            for dropping in self._drops:
                dropping.result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
