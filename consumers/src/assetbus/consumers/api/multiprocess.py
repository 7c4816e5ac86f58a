"""The API's metrics under `--workers N`: prometheus-client's multiprocess mode.

Each worker is its own process with its own counters; a scrape reaches one of them. With
`PROMETHEUS_MULTIPROC_DIR` set before prometheus-client is imported, every worker writes its request
counters and histograms to files in that directory, and `/metrics` in any worker sums them over all
workers (`MultiProcessCollector`). `assetbus run api --workers N` (N > 1) sets the variable to a fresh
directory when it is unset, and empties a given one at start (files of an earlier run would be summed
too). The pipeline metrics and `assetbus_build_info` are each worker's own reading of the broker and of
itself, the same in every worker, and are not summed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = ["ENV", "multiprocess_dir", "prepare_multiprocess"]

ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The directory of the multiprocess mode, or None (one process: its own counters)."""
    return os.environ.get(ENV) or None


def prepare_multiprocess(workers: int) -> str | None:
    """Before the workers start: for `workers > 1`, the directory set (a fresh one if unset) and emptied."""
    if workers <= 1:
        return multiprocess_dir()
    path = Path(multiprocess_dir() or tempfile.mkdtemp(prefix="assetbus-api-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ[ENV] = str(path)
    if "prometheus_client.values" in sys.modules:  # imported already: new metrics must write to the directory
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    return str(path)
