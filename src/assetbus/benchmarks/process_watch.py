"""A benchmarked subprocess's CPU time and peak RSS, sampled in the background (psutil)."""

from __future__ import annotations

import asyncio
import contextlib

import psutil


class ProcessWatch:
    """Samples a process tree's RSS every `interval_s` while started; `cpu_s()` reads user + system time."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self._process = psutil.Process(pid)
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self.peak_rss = 0

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    def start(self) -> None:
        self._task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._sample_once()

    def cpu_s(self) -> float:
        """User + system CPU seconds of the process (when a profiler wraps it: of the profiled child)."""
        total = 0.0
        with contextlib.suppress(psutil.Error):
            for proc in self._leaves():
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def _sample_once(self) -> None:
        with contextlib.suppress(psutil.Error):
            rss = sum(proc.memory_info().rss for proc in self._leaves())
            self.peak_rss = max(self.peak_rss, int(rss))

    def _leaves(self) -> list[psutil.Process]:
        children = self._process.children(recursive=True)
        return children or [self._process]

    async def _sample(self) -> None:
        while True:
            self._sample_once()
            await asyncio.sleep(self._interval_s)
