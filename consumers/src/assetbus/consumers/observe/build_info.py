"""`assetbus_build_info`: which release of each distribution a process runs, on every `/metrics`.

A gauge of 1 with the versions as labels (Prometheus' convention for build information), so a dashboard
or an alert can tell a mixed deployment (a persister of one release beside a scheduler of another).
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import CollectorRegistry, Gauge

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
    info = Gauge("assetbus_build_info", "The assetbus release this process runs (always 1).",
                 list(_labels()), registry=registry)
    info.labels(**_labels()).set(1)


def _labels() -> dict[str, str]:
    return {"version": _version("assetbus"), "sdk": _version("assetbus-sdk"), "schemas": _version("assetbus-schemas"),
            "python": platform.python_version()}
