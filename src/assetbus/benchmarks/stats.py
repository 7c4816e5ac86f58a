"""Summary statistics of measured latencies (shared by the benchmarks)."""

from __future__ import annotations

from collections.abc import Iterable


def percentile(values: Iterable[float], p: float) -> float:
    """The nearest-rank `p`-th percentile (0 to 100) of `values`; NaN when there are none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
