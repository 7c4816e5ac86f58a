"""assetbus for Airflow 3 tasks: `asset.emit()` on Airflow's own Assets, and `AssetbusNotifier`.

Importing this module inside Airflow gives `airflow.sdk.Asset` its `emit()` / `aemit()` methods (see
`emit.install`). Install with `pip install 'assetbus-sdk[airflow]'`; give the workers the Airflow connection
`assetbus_default` (the API's URL as host, the worker credential as password; see `connection.py`).
Without Airflow installed, the Airflow-free parts (attempts, token source) still import.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from assetbus.producers.airflow.attempt import Attempt, attempt_from_context, running_attempt
from assetbus.producers.airflow.connection import WorkerAccess, worker_access
from assetbus.producers.airflow.credentials import Credentials, TokenRequestFailed, TokenSource, token_source
from assetbus.producers.airflow.emit import aemit, attempt_context, emit, install

if TYPE_CHECKING:
    from assetbus.producers.airflow.notifier import AssetbusNotifier

AIRFLOW_INSTALLED = importlib.util.find_spec("airflow") is not None
if AIRFLOW_INSTALLED:
    install()


def __getattr__(name: str) -> Any:
    if name == "AssetbusNotifier":  # imports airflow.sdk: only where Airflow is installed
        from assetbus.producers.airflow.notifier import AssetbusNotifier

        return AssetbusNotifier
    raise AttributeError(name)


__all__ = [
    "AIRFLOW_INSTALLED",
    "AssetbusNotifier",
    "Attempt",
    "Credentials",
    "TokenRequestFailed",
    "TokenSource",
    "WorkerAccess",
    "aemit",
    "attempt_context",
    "attempt_from_context",
    "emit",
    "install",
    "running_attempt",
    "token_source",
    "worker_access",
]
