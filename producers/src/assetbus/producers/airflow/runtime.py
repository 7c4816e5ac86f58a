"""Which Airflow this is: assetbus's Airflow integration needs Airflow 3.3 or newer (task SDK 1.3 or newer),
and `check_airflow_version()` refuses an older runtime with one message naming the versions found.
"""

from __future__ import annotations

import re

from assetbus.producers.distributions import installed_version
from assetbus.producers.errors import EmitterError

MIN_AIRFLOW = (3, 3)
MIN_TASK_SDK = (1, 3)
"""The task SDK that ships with Airflow 3.3 (Airflow 3.N pairs with apache-airflow-task-sdk 1.N)."""
INSTALL = "pip install 'assetbus-sdk[airflow]' (it needs apache-airflow / apache-airflow-task-sdk for Airflow >= 3.3)"


class AirflowVersionMismatch(EmitterError, ImportError):
    """The Airflow in this environment is older than the assetbus integration supports."""


def installed_versions() -> dict[str, tuple[int, int]]:
    """The Airflow distributions found here, and their release (major, minor)."""
    found: dict[str, tuple[int, int]] = {}
    for name in ("apache-airflow-core", "apache-airflow", "apache-airflow-task-sdk"):
        if (found_version := installed_version(name)) and (match := re.match(r"(\d+)\.(\d+)", found_version)):
            found[name] = (int(match[1]), int(match[2]))
    return found


def mismatch(found: dict[str, tuple[int, int]]) -> str | None:
    """Why these Airflow versions cannot run assetbus's integration; None when they can."""
    too_old = [f"{name} {major}.{minor}" for name, (major, minor) in found.items()
               if (major, minor) < (MIN_TASK_SDK if name == "apache-airflow-task-sdk" else MIN_AIRFLOW)]
    if not too_old:
        return None
    return (f"assetbus's Airflow integration needs Airflow >= {MIN_AIRFLOW[0]}.{MIN_AIRFLOW[1]} "
            f"(apache-airflow-task-sdk >= {MIN_TASK_SDK[0]}.{MIN_TASK_SDK[1]}); found {', '.join(too_old)}. "
            f"Upgrade Airflow, or {INSTALL}")


def check_airflow_version() -> None:
    """Raise AirflowVersionMismatch (an ImportError) on an Airflow older than 3.3."""
    reason = mismatch(installed_versions())
    if reason is not None:
        raise AirflowVersionMismatch(reason)
