"""The Airflow 3 integration, server side: the REST client, the bridge, outcomes, asset sync, attempt checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.airflow.account import AirflowAccount
    from assetbus.consumers.airflow.bridge import AirflowBridge
    from assetbus.consumers.airflow.client import AirflowClient
    from assetbus.consumers.airflow.config import BridgeConfig
    from assetbus.consumers.airflow.dagruns import CONF_KEY, dag_run_id, run_conf
    from assetbus.consumers.airflow.errors import (
        AirflowAuthError,
        AirflowError,
        AirflowNotFound,
        AirflowRefused,
        AirflowTokenRefused,
        AirflowUnavailable,
    )
    from assetbus.consumers.airflow.sync import AirflowSyncReport
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = ["CONF_KEY", "AirflowAccount", "AirflowAuthError", "AirflowBridge", "AirflowClient", "AirflowError",
           "AirflowNotFound", "AirflowRefused", "AirflowSyncReport", "AirflowTokenRefused", "AirflowUnavailable",
           "BridgeConfig", "dag_run_id", "run_conf"]
