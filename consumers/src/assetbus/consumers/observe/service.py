"""What every long-running service shares: `async with` runs `start()` and `stop()`, and the probes
(`/metrics`, `/healthz`, `/readyz`) it serves once started."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Self

from prometheus_client import CollectorRegistry

from assetbus.consumers.observe.probes import ProbedService, ProbeServer, start_probes

__all__ = ["Service", "cancel_and_wait"]


class Service:
    """Base of the persister, the scheduler, the bridge and the forwarder."""

    _probes: ProbeServer | None = None

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def metrics_port(self) -> int | None:
        """The bound port of /metrics, /healthz and /readyz (None: not served)."""
        return self._probes.port if self._probes is not None else None

    def serve_probes(self, registry: CollectorRegistry, config: ProbedService) -> None:
        """Serve the probes (when `config.metrics_port` is set): the last step of a successful `start()`."""
        self._probes = start_probes(registry, config)

    def stop_probes(self) -> None:
        if self._probes is not None:
            self._probes.stop()
            self._probes = None


async def cancel_and_wait(task: asyncio.Task[object] | None) -> None:
    """Cancel a background task and wait until it has ended (None: nothing to do)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
