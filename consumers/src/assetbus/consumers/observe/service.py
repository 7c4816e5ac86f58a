"""The one service shape (docs/architecture.md, "One service shape"): `dependencies` → `open` → `join` → the
probes → `started`, each step registering what it opened on one `AsyncExitStack`, so that a failed start and
`stop()` close it all in reverse (the consumer first: its batch in flight finishes and commits).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from typing import Any, Self

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.observe.probes import ProbedService, ProbeServer, Registered
from assetbus.consumers.observe.process_metrics import register_process_metrics
from assetbus.consumers.observe.readiness import ReadinessChecks
from assetbus.consumers.storage import wait_for_database
from assetbus.producers.kafka.access import AccessRefusals
from assetbus.producers.kafka.periodic import cancel_and_wait, every
from assetbus.producers.kafka.shell import ServiceShell
from assetbus.producers.kafka.startup import startup_policy, wait_for_kafka
from assetbus.producers.kafka.topics import TopicSpec

__all__ = ["Service", "cancel_and_wait", "every", "wait_for_dependencies"]  # the periodic loop: re-exported


class Service:
    """Base of the persister, the scheduler, the bridge and the forwarder: a service fills in the steps that
    `start()` runs in order; `async with` runs `start()` and `stop()`."""

    log: logging.Logger = logging.getLogger("assetbus.service")
    shell: ServiceShell[Any] | None = None
    """The service's consumer group, if it has one: joined by the default `join`, awaited by `run_forever`."""
    config: ProbedService | None = None
    metrics: Registered | None = None
    """With `config`, what the probes serve (each service sets both; None: no probes)."""
    _probes: ProbeServer | None = None
    _stack: AsyncExitStack | None = None

    @functools.cached_property
    def refusals(self) -> AccessRefusals:
        """What the cluster's ACLs refuse of its work now (shell, `self.every` loops, publishers): `/readyz`
        answers 503 naming the ACL to add, and `assetbus_kafka_access_denied` shows it, until the work succeeds."""
        return AccessRefusals()

    async def dependencies(self, stack: AsyncExitStack) -> None:
        """Wait for what the service needs before it opens anything (see `wait_for`)."""

    async def open(self, stack: AsyncExitStack) -> None:
        pass

    async def join(self, stack: AsyncExitStack) -> None:
        if self.shell is not None:
            await self.shell.start()
            stack.push_async_callback(self.shell.stop)  # the batch in flight finishes and commits first

    async def started(self, stack: AsyncExitStack) -> None:
        """Runs once the probes answer: slow first work that they should already report on."""

    async def start(self) -> None:
        async with AsyncExitStack() as stack:
            await self.dependencies(stack)
            await self.open(stack)
            await self.join(stack)
            config, metrics = self.config, self.metrics  # the probes check its broker, database and refusals
            if config is not None and metrics is not None and (port := config.metrics_port) is not None:
                register_process_metrics(metrics.registry, self.refusals)
                checks = ReadinessChecks(broker=config.kafka, database_url=config.database_url, access=self.refusals)
                self._probes = ProbeServer(metrics.registry, port, config.metrics_host, checks=checks)
                self._probes.start()  # from inside the service's event loop, which /healthz then watches
                stack.callback(self.stop_probes)
            await self.started(stack)
            self._stack = stack.pop_all()

    async def stop(self) -> None:
        """Undo `start()` in reverse (safe to call twice, or after a failed start)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run_forever(self) -> None:
        """Block while the service works; re-raise what ended its work (a consume loop that died, say)."""
        if self.shell is None:
            raise NotImplementedError
        await self.shell.run_forever()

    async def serve_until_signalled(self) -> None:
        """For `assetbus run ...`: start, block until SIGINT or SIGTERM (or until the service's work ended: its
        error re-raised), then stop: a clean stop, exit code 0. A signal that comes while the service starts
        (waiting for Kafka, say) cancels the start, which closes what it had opened: no start-up timeout to
        wait out first."""
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        try:
            if not await _unless(self.start(), stopping):
                self.log.info("stopped by a signal while starting")
                return
            try:
                if not stopping.is_set():
                    await _unless(self.run_forever(), stopping)
            finally:
                await self.stop()
            self.log.info("stopped")
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def every(self, interval_s: float, action: Callable[[], Awaitable[Any]], *, what: str, stack: AsyncExitStack,
              first_after_s: float | None = None) -> asyncio.Task[None]:
        """The toolkit's periodic loop, with its refused rounds recorded in `refusals`, cancelled with `stack`."""
        return every(interval_s, action, what=what, log=self.log, first_after_s=first_after_s, stack=stack,
                     refusals=self.refusals)

    async def wait_for(self, stack: AsyncExitStack, config: Any, *, engine: AsyncEngine | None = None,
                       owned_engine: bool = True, required: Iterable[TopicSpec] = ()) -> None:
        """The usual `dependencies` (`wait_for_dependencies`). An `owned_engine` is disposed on `stop()`, or at once
        when the wait fails."""
        if engine is not None and owned_engine:
            stack.push_async_callback(engine.dispose)
        await wait_for_dependencies(config, self.log, engine=engine, required=required)

    @property
    def metrics_port(self) -> int | None:
        """The bound port of the probes (None: not served)."""
        return self._probes.port if self._probes is not None else None

    def stop_probes(self) -> None:
        if self._probes is not None:
            self._probes.stop()
            self._probes = None


async def wait_for_dependencies(config: Any, log: logging.Logger, *, engine: AsyncEngine | None = None,
                                required: Iterable[TopicSpec] = ()) -> None:
    """What every service (the API too) waits for at start: Kafka and the `required` topics, then PostgreSQL
    (with an `engine`), within `config.startup_timeout_s` (docs/architecture.md names the exit codes)."""
    policy = startup_policy(config.startup_timeout_s)
    await wait_for_kafka(config.kafka, policy, log, required=required, migrate_creates=config.create_topics)
    if engine is not None:
        await wait_for_database(engine, policy, log)


async def _unless(work: Awaitable[None], stopping: asyncio.Event) -> bool:
    """`work` as a task, cancelled (and awaited: a cancelled start's stack closes what it had opened) if `stopping`
    is set before it ends. True when it ended on its own; its error is re-raised."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(waiter)
        if not task.done():
            await cancel_and_wait(task)
    if task.cancelled():
        return False
    task.result()
    return True
