"""Sampling the processes a benchmark runs on: RSS and CPU time of its `assetbus run ...` children,
and CPU time of the Kafka broker and PostgreSQL (shared with whatever else runs on the machine).

`ProcessSampler` finds the services by command line (`run persister`, `run scheduler`, `run api`) so that
no benchmark has to hand its processes out; `watching` follows one process the benchmark started.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

import psutil

from assetbus.benchmarks.scratch import in_background

SERVICES = ("persister", "scheduler", "api")


@dataclass
class Sample:
    at: float
    """time.perf_counter() when taken"""
    rss_mb: float
    cpu_s: float


@dataclass
class Sampled:
    role: str
    pid: int
    samples: list[Sample] = field(default_factory=list)

    @property
    def peak_rss_mb(self) -> float:
        return max((s.rss_mb for s in self.samples), default=0.0)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds used between two perf_counter() times (nearest samples)."""
        inside = [s for s in self.samples if start <= s.at <= end]
        return inside[-1].cpu_s - inside[0].cpu_s if len(inside) > 1 else 0.0


@dataclass
class ProcessSampler:
    """Samples every `interval_s` while running; `infra=True` also sums the broker's and PostgreSQL's CPU."""

    interval_s: float = 0.2
    infra: bool = False
    processes: dict[int, Sampled] = field(default_factory=dict)
    infra_cpu: list[tuple[float, float, float]] = field(default_factory=list)
    """(perf_counter, Kafka broker CPU s, PostgreSQL CPU s), summed over their processes"""

    def by_role(self, role: str) -> list[Sampled]:
        return [p for p in self.processes.values() if p.role == role]

    def peak_rss_mb(self, role: str) -> float:
        return max((p.peak_rss_mb for p in self.by_role(role)), default=0.0)

    def infra_cpu_between(self, start: float, end: float) -> tuple[float, float]:
        inside = [s for s in self.infra_cpu if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0, 0.0
        return inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]

    def sample(self) -> None:
        now = time.perf_counter()
        for child in psutil.Process().children(recursive=True):
            try:
                role = _role(child.cmdline())
                if role is None:
                    continue
                times, rss = child.cpu_times(), child.memory_info().rss
            except psutil.Error:
                continue
            entry = self.processes.setdefault(child.pid, Sampled(role, child.pid))
            entry.samples.append(Sample(now, rss / 2**20, times.user + times.system))
        if self.infra:
            self.infra_cpu.append((now, *infra_cpu()))

    @contextmanager
    def running(self) -> Iterator[ProcessSampler]:
        async def run() -> None:
            while True:
                await asyncio.to_thread(self.sample)
                await asyncio.sleep(self.interval_s)

        task = asyncio.get_running_loop().create_task(run())
        try:
            yield self
        finally:
            task.cancel()


def _role(cmdline: list[str]) -> str | None:
    for i, arg in enumerate(cmdline[:-1]):
        if arg == "run" and cmdline[i + 1] in SERVICES:
            return cmdline[i + 1]
    return None


def infra_role(info: dict[str, object]) -> str | None:
    """`kafka` for a local Kafka broker, `postgres` for a PostgreSQL process, from psutil's name and cmdline."""
    cmdline = info.get("cmdline") or []
    if info.get("name") == "java" and isinstance(cmdline, list) and any("kafka" in str(a).lower() for a in cmdline):
        return "kafka"
    if info.get("name") in ("postgres", "postmaster"):
        return "postgres"
    return None


def infra_cpu() -> tuple[float, float]:
    """CPU seconds used so far by the local Kafka broker(s) and by PostgreSQL (all its processes)."""
    used = {"kafka": 0.0, "postgres": 0.0}
    for proc in psutil.process_iter(["name", "cmdline", "cpu_times"]):
        times = proc.info.get("cpu_times")
        if times is not None and (role := infra_role(proc.info)) is not None:
            used[role] += times.user + times.system
    return used["kafka"], used["postgres"]


class ProcessWatch:
    """A process tree's peak RSS (sampled while `watching` it) and its CPU time."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._process = psutil.Process(pid)
        self.peak_rss = 0

    def cpu_s(self) -> float:
        """User + system CPU seconds of the process (when a profiler wraps it: of the profiled child)."""
        total = 0.0
        with contextlib.suppress(psutil.Error):
            for proc in self._leaves():
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def sample(self) -> None:
        with contextlib.suppress(psutil.Error):
            rss = sum(proc.memory_info().rss for proc in self._leaves())
            self.peak_rss = max(self.peak_rss, int(rss))

    def _leaves(self) -> list[psutil.Process]:
        children = self._process.children(recursive=True)
        return children or [self._process]


@asynccontextmanager
async def watching(pid: int, interval_s: float = 0.05) -> AsyncIterator[ProcessWatch]:
    """Samples the RSS of `pid`'s process tree every `interval_s` during the block, and once at its end."""
    watch = ProcessWatch(pid)

    async def sample() -> None:
        while True:
            watch.sample()
            await asyncio.sleep(interval_s)

    async with in_background(sample()):
        yield watch
    watch.sample()
