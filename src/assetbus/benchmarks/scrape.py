"""Reading a service's Prometheus endpoint: histograms as bucket counts, for benchmark reports."""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Histogram:
    """Cumulative bucket counts by upper bound, as Prometheus exposes them."""

    buckets: list[tuple[float, float]] = field(default_factory=list)
    total: float = 0.0
    count: float = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def quantile(self, q: float) -> float:
        """Upper bound of the bucket holding the q-quantile (Prometheus resolution)."""
        wanted = q * self.count
        for bound, cumulative in self.buckets:
            if cumulative >= wanted:
                return bound
        return math.inf

    def shares(self) -> list[tuple[str, float]]:
        """(bucket label, share of observations) for the non-empty buckets."""
        out: list[tuple[str, float]] = []
        previous_bound, previous = 0.0, 0.0
        for bound, cumulative in self.buckets:
            if cumulative > previous and self.count:
                low = f"{previous_bound:g}"
                label = f"> {low}" if math.isinf(bound) else f"{low}-{bound:g}"
                out.append((label, (cumulative - previous) / self.count))
            previous_bound, previous = bound, cumulative
        return out


@dataclass
class Metrics:
    families: dict[str, dict[str, list[tuple[dict[str, str], float]]]]

    def histogram(self, name: str) -> Histogram:
        samples = self.families.get(name, {})
        buckets = sorted((float(labels["le"]), value) for labels, value in samples.get(f"{name}_bucket", []))
        return Histogram(buckets=buckets, total=sum(v for _, v in samples.get(f"{name}_sum", [])),
                         count=sum(v for _, v in samples.get(f"{name}_count", [])))

    def value(self, name: str) -> float:
        """Sum of a counter's or gauge's samples over all labels."""
        samples = self.families.get(name, {})
        return sum(v for key in (name, f"{name}_total") for _, v in samples.get(key, []))


def scrape(url: str, timeout_s: float = 5.0) -> Metrics:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        text = response.read().decode()
    families: dict[str, dict[str, list[tuple[dict[str, str], float]]]] = {}
    for family in text_string_to_metric_families(text):
        by_sample = families.setdefault(family.name, {})
        for sample in family.samples:
            by_sample.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return Metrics(families)

