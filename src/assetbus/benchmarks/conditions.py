"""What a benchmark ran on: the machine, the versions, what else was running (shared by the benchmarks)."""

from __future__ import annotations

import contextlib
import os
import platform
import time
from importlib.metadata import version
from typing import Any

import psutil

from assetbus.settings import Settings


def conditions(database_connection: str | None = None) -> dict[str, str]:
    """The machine, the versions, what else was running; `database_connection` describes how the
    measured process reached PostgreSQL, when that matters."""
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}",
        "python": platform.python_version(),
        "libraries": ", ".join(f"{name} {version(name)}" for name in ("aiokafka", "pydantic",
                                                                      "asyncpg", "sqlalchemy")),
        "infrastructure": "Kafka broker and PostgreSQL on the same machine",
        **({} if database_connection is None else {"database connection": database_connection}),
        "other processes (CPU%, top 3)": _busiest(),
    }


def _busiest() -> str:
    procs = list(psutil.process_iter(["name", "cpu_percent"]))  # the first cpu_percent starts each one's count
    time.sleep(0.5)
    usage = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            usage.append((proc.cpu_percent(None), proc.info["name"]))
    usage.sort(reverse=True)
    return ", ".join(f"{name} {cpu:.0f}%" for cpu, name in usage[:3])


def run_conditions(settings: Settings, shared: dict[str, str], postgres: str,
                   load_before: tuple[float, ...]) -> dict[str, Any]:
    """The conditions `bench all` and `bench airflow` print under these JSON keys, from `conditions()` taken
    (`shared`), PostgreSQL's version and the load average before the run; the load average after is now."""
    return {
        "cores": os.cpu_count(),
        "machine": shared["machine"],
        "python": platform.python_version(),
        "kafka": f"{settings.infra.kafka_version} (one broker, same machine)",
        "postgresql": postgres,
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "other_processes_top3": shared["other processes (CPU%, top 3)"],
    }
