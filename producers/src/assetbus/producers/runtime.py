"""The process's emitter runtime: a private event loop on a background thread, for sync task code.

Started lazily by the first emission, one per process, with one Dispatcher (one producer, one
receipt listener) per broker and topic prefix, shared by every task and callback of the process.
`shutdown()` sends what was handed over and stops it; it runs at interpreter exit, and a forked
child starts its own runtime instead of using its parent's thread.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from assetbus.producers.dispatch import DispatchConfig, Dispatcher
from assetbus.producers.errors import BrokerUnavailable, EmitterClosed, EmitterError
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.wire import EmissionRequest
from assetbus.schemas import Receipt, Topics

log = logging.getLogger("assetbus.emitter")
T = TypeVar("T")


def _chain(source: asyncio.Future[Receipt]) -> concurrent.futures.Future[Receipt]:
    """A thread-safe future completed with `source`'s outcome."""
    target: concurrent.futures.Future[Receipt] = concurrent.futures.Future()

    def copy(done: asyncio.Future[Receipt]) -> None:
        if done.cancelled():
            target.cancel()
        elif (error := done.exception()) is not None:
            target.set_exception(error)
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)
    return target


class EmitterRuntime:
    """A background event loop hosting the process's dispatchers."""

    def __init__(self, config: DispatchConfig | None = None) -> None:
        self.config = config or DispatchConfig()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._dispatchers: dict[tuple[KafkaConnection, str], Dispatcher] = {}
        self._starting: dict[tuple[KafkaConnection, str], asyncio.Lock] = {}
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._stopped:
                raise EmitterClosed("the process's emitter was shut down")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="assetbus-emitter", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the runtime's loop (thread-safe)."""
        loop = self._ensure_loop()
        if threading.current_thread() is self._thread:
            coro.close()
            raise EmitterError("a blocking emit() was called on the emitter's own event loop; use await aemit()")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    async def dispatcher(self, connection: KafkaConnection, topics: Topics) -> Dispatcher:
        """The running dispatcher for this connection and prefix (started on first use). On the loop only."""
        key = (connection, topics.prefix)
        dispatcher = self._dispatchers.get(key)
        if dispatcher is not None:
            return dispatcher
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            dispatcher = self._dispatchers.get(key)
            if dispatcher is None:
                candidate = Dispatcher(connection, topics, config=self.config)
                try:
                    await candidate.start()
                except EmitterError:
                    raise
                except Exception as error:  # aiokafka raises several unrelated types for "cannot connect"
                    raise BrokerUnavailable.starting(connection, error, topics.prefix) from error
                dispatcher = self._dispatchers[key] = candidate
        return dispatcher

    def stop(self, timeout_s: float = 30.0) -> None:
        """Send what was handed over, stop the dispatchers and the loop. Idempotent."""
        with self._lock:
            self._stopped = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if threading.current_thread() is thread:
            raise EmitterError("stop() cannot be called from the emitter's own loop")

        async def close_all() -> None:
            for dispatcher in list(self._dispatchers.values()):
                try:
                    await dispatcher.stop()
                except Exception:
                    log.exception("stopping an emitter failed")
            self._dispatchers.clear()

        try:
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout_s)
        except (concurrent.futures.TimeoutError, RuntimeError) as error:
            log.warning("the emitter did not stop cleanly: %s", error)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)
            if not thread.is_alive():
                loop.close()


class KafkaTransport:
    """Emissions of a context, sent through the runtime's dispatcher for its broker and prefix."""

    def __init__(self, runtime: EmitterRuntime, connection: KafkaConnection, topics: Topics) -> None:
        self._runtime = runtime
        self._connection = connection
        self._topics = topics

    async def _handover(self, token: str, request: EmissionRequest) -> concurrent.futures.Future[Receipt]:
        dispatcher = await self._runtime.dispatcher(self._connection, self._topics)
        return _chain(await dispatcher.submit_request(token, request))

    def submit(self, token: str, request: EmissionRequest) -> concurrent.futures.Future[Receipt]:
        return self._runtime.run(self._handover(token, request)).result()

    async def asubmit(self, token: str, request: EmissionRequest) -> asyncio.Future[Receipt]:
        handed = self._runtime.run(self._handover(token, request))
        receipt: concurrent.futures.Future[Receipt] = await asyncio.wrap_future(handed)
        return asyncio.wrap_future(receipt)


_runtime: EmitterRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> EmitterRuntime:
    """The process's runtime (created on first use)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime._stopped:
            _runtime = EmitterRuntime()
        return _runtime


def configure(config: DispatchConfig) -> None:
    """Set the runtime's settings (timeouts, in-flight bound, linger) before its first emission."""
    global _runtime
    with _runtime_lock:
        if _runtime is not None and _runtime.running:
            raise EmitterError("configure() must run before the first emission of the process")
        _runtime = EmitterRuntime(config)


def shutdown(timeout_s: float = 30.0) -> None:
    """Send everything handed over to Kafka and stop the process's emitter (also run at exit)."""
    global _runtime
    with _runtime_lock:
        runtime, _runtime = _runtime, None
    if runtime is not None:
        runtime.stop(timeout_s)


def _forget_after_fork() -> None:
    global _runtime, _runtime_lock
    _runtime, _runtime_lock = None, threading.Lock()


atexit.register(shutdown)
with contextlib.suppress(AttributeError):  # not on every platform
    os.register_at_fork(after_in_child=_forget_after_fork)
