"""Summary statistics of measured latencies, and how the benchmarks print them (shared by the benchmarks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def percentile(values: Iterable[float], p: float) -> float:
    """The nearest-rank `p`-th percentile (0 to 100) of `values`; NaN when there are none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def per_second(count: float, seconds: float) -> float:
    """A rate; 0 when no time was measured."""
    return count / seconds if seconds else 0.0


def us_per(cpu_s: float, count: float) -> float:
    """CPU microseconds per item; NaN when there were none."""
    return cpu_s / count * 1e6 if count else float("nan")


class Throughput:
    """The rates of a run that applied `events` in `seconds`, its processes using `cpu_s` (user + system)."""

    events: int
    seconds: float
    cpu_s: float

    @property
    def events_per_s(self) -> float:
        return per_second(self.events, self.seconds)

    @property
    def cpu_us_per_event(self) -> float:
        return us_per(self.cpu_s, self.events)


def load_text(values: Sequence[float]) -> str:
    """Load averages as printed with the figures: `1.02 0.87 0.55`."""
    return " ".join(f"{v:.2f}" for v in values)
