"""`assetbus_build_info`: which release of each distribution a process runs, on every `/metrics`.

A gauge of 1 with the versions as labels (Prometheus' convention for build information), so a dashboard
or an alert can tell a mixed deployment (a persister of one release beside a scheduler of another). A collector,
not a `Gauge`: under prometheus-client's multiprocess mode (the API's workers) a gauge would be written to the
shared directory once per worker; this one is the process's own answer.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["register_build_info"]


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def register_build_info(registry: CollectorRegistry) -> None:
    """Add `assetbus_build_info` to `registry` (once: a registry that has it already is left alone)."""
    if registry.get_sample_value("assetbus_build_info", _labels()) is not None:
        return
    registry.register(_BuildInfo(_labels()))


class _BuildInfo(Collector):
    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("assetbus_build_info", "The assetbus release this process runs (always 1).",
                                   labels=list(self.labels))
        family.add_metric(list(self.labels.values()), 1.0)
        yield family


def _labels() -> dict[str, str]:
    return {"version": _version("assetbus"), "sdk": _version("assetbus-sdk"), "schemas": _version("assetbus-schemas"),
            "python": platform.python_version()}
