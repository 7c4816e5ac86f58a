"""The scheduler benchmark's options and result: throughput, CPU and memory of the scheduler, latency per offered
rate, and `summary()`, the flat figures `assetbus bench all --json` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assetbus.benchmarks.stats import per_second, percentile, us_per


@dataclass(frozen=True)
class SchedulerBenchOptions:
    events: int = 20_000
    rates: tuple[int, ...] = (1_000, 5_000)
    """Offered emissions/s of the latency runs, one run each (fresh prefix and database)."""
    seconds: float = 10.0
    warmup_s: float = 1.0
    max_records: int | None = None
    """The scheduler's --max-records; None: its own default."""
    timeout_s: float = 300.0
    profile: Path | None = None
    """Run the throughput run's scheduler under `py-spy record --format raw` into this file."""


STAGES = ("emit → persister transaction", "persister transaction → asset event sent",
          "asset event sent → scheduler transaction", "scheduler transaction → signal sent",
          "signal sent → signal read")
"""The stages of a latency run's path, between the marks `scheduler_latency` records."""


@dataclass
class LatencyRun:
    """One offered rate: emit() → readiness signal read, and emit() → receipt, per event (ms)."""

    rate: int
    offered: int = 0
    offered_rate: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    receipt_latencies_ms: list[float] = field(default_factory=list)
    scheduler_cpu_s: float = 0.0
    """The scheduler process's user + system CPU over the offered seconds."""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    stages_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per stage of the path (`STAGES`), each counted event's time in it (ms)."""

    def percentile(self, p: float, receipts: bool = False) -> float:
        return percentile(self.receipt_latencies_ms if receipts else self.latencies_ms, p)


@dataclass
class SchedulerBenchReport:
    options: SchedulerBenchOptions
    throughput_events: int = 0
    throughput_s: float = 0.0
    throughput_cpu_s: float = 0.0
    """The scheduler's user + system CPU while it applied those events."""
    runs_created: dict[str, int] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    """The scheduler process's peak RSS over every run (psutil, sampled every 50 ms)."""
    latency: list[LatencyRun] = field(default_factory=list)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    conditions: dict[str, str] = field(default_factory=dict)

    @property
    def events_per_s(self) -> float:
        return per_second(self.throughput_events, self.throughput_s)

    @property
    def cpu_us_per_event(self) -> float:
        return us_per(self.throughput_cpu_s, self.throughput_events)

    def summary(self) -> dict[str, float]:
        """Flat figures for `bench all --json`: the readiness keys without a suffix are at 1,000/s offered."""
        figures = {"scheduler_events_per_s": round(self.events_per_s, 1),
                   "scheduler_cpu_us_per_event": round(self.cpu_us_per_event, 1),
                   "scheduler_peak_rss_mb": round(self.peak_rss_mb, 1)}
        for run in self.latency:
            suffix = "" if run.rate == 1_000 else f"_at_{run.rate}"
            figures[f"readiness_p50_ms{suffix}"] = round(run.percentile(50), 1)
            figures[f"readiness_p99_ms{suffix}"] = round(run.percentile(99), 1)
        return figures
