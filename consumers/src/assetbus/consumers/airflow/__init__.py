"""The Airflow 3 integration, server side: the REST client, the bridge, outcomes, asset sync, attempt checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.airflow.account import AirflowAccount
    from assetbus.consumers.airflow.bridge import AirflowBridge, BridgeLedger
    from assetbus.consumers.airflow.client import AirflowClient
    from assetbus.consumers.airflow.config import BridgeConfig
    from assetbus.consumers.airflow.dagruns import CONF_KEY, CreatedRun, dag_run_id, run_conf, run_state, trigger_run
    from assetbus.consumers.airflow.errors import (
        AirflowAuthError,
        AirflowError,
        AirflowNotFound,
        AirflowRefused,
        AirflowTokenRefused,
        AirflowUnavailable,
    )
    from assetbus.consumers.airflow.metrics import BridgeMetrics
    from assetbus.consumers.airflow.minting import Minter
    from assetbus.consumers.airflow.outcomes import OutcomePoller
    from assetbus.consumers.airflow.sync import (
        AirflowAsset,
        AirflowSyncReport,
        apply_airflow_assets,
        read_airflow_assets,
    )
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__, {
        ".bridge": ("AirflowBridge", "BridgeLedger"),
        ".account": ("AirflowAccount",),
        ".client": ("AirflowClient",),
        ".config": ("BridgeConfig",),
        ".dagruns": ("CONF_KEY", "CreatedRun", "dag_run_id", "run_conf", "run_state", "trigger_run"),
        ".errors": ("AirflowAuthError", "AirflowError", "AirflowNotFound", "AirflowRefused", "AirflowTokenRefused",
                    "AirflowUnavailable"),
        ".metrics": ("BridgeMetrics",),
        ".minting": ("Minter",),
        ".outcomes": ("OutcomePoller",),
        ".sync": ("AirflowAsset", "AirflowSyncReport", "apply_airflow_assets", "read_airflow_assets"),
    })

__all__ = ["CONF_KEY", "AirflowAccount", "AirflowAsset", "AirflowAuthError", "AirflowBridge", "AirflowClient",
           "AirflowError", "AirflowNotFound", "AirflowRefused", "AirflowSyncReport", "AirflowTokenRefused",
           "AirflowUnavailable", "BridgeConfig", "BridgeLedger", "BridgeMetrics", "CreatedRun", "Minter",
           "OutcomePoller", "apply_airflow_assets", "dag_run_id", "read_airflow_assets", "run_conf", "run_state",
           "trigger_run"]
