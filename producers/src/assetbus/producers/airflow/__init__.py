"""assetbus for Airflow 3.3+ tasks: `emit(asset, ...)`, `AssetbusHook`, `AssetbusEmitOperator`, `AssetbusNotifier`
(docs/airflow.md). Importing it changes nothing in Airflow; where Airflow is installed, importing it on an
Airflow older than 3.3 raises AirflowVersionMismatch; without Airflow, the Airflow-free parts (attempts, token
source) import.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from assetbus.producers.airflow.runtime import AirflowVersionMismatch, check_airflow_version

AIRFLOW_INSTALLED = importlib.util.find_spec("airflow") is not None
if AIRFLOW_INSTALLED:
    check_airflow_version()

from assetbus.producers.airflow.attempt import Attempt, attempt_from_context, running_attempt  # noqa: E402
from assetbus.producers.airflow.connection import WorkerAccess, worker_access  # noqa: E402
from assetbus.producers.airflow.credentials import (  # noqa: E402
    Credentials,
    TokenRequestFailed,
    TokenSource,
    token_source,
)
from assetbus.producers.airflow.emit import (  # noqa: E402
    AssetEmitConflict,
    aemit,
    attempt_context,
    emit,
    install_asset_emit,
)

if TYPE_CHECKING:
    from assetbus.producers.airflow.hook import AssetbusHook
    from assetbus.producers.airflow.notifier import AssetbusNotifier
    from assetbus.producers.airflow.operator import AssetbusEmitOperator

_NEEDS_AIRFLOW = {
    "AssetbusHook": "assetbus.producers.airflow.hook",
    "AssetbusNotifier": "assetbus.producers.airflow.notifier",
    "AssetbusEmitOperator": "assetbus.producers.airflow.operator",
}


def __getattr__(name: str) -> Any:
    if name in _NEEDS_AIRFLOW:  # these import airflow.sdk: only where Airflow is installed
        return getattr(importlib.import_module(_NEEDS_AIRFLOW[name]), name)
    raise AttributeError(name)


__all__ = [
    "AIRFLOW_INSTALLED",
    "AirflowVersionMismatch",
    "AssetEmitConflict",
    "AssetbusEmitOperator",
    "AssetbusHook",
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
    "install_asset_emit",
    "running_attempt",
    "token_source",
    "worker_access",
]
