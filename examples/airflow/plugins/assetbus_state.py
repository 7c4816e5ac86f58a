"""An Airflow plugin for the api-server that runs `AssetbusStoreBackend`: it tells the backend which task
instance asks for an asset's state, so that only tasks registered with the asset reach it; and it checks, when the
api-server starts, that the backend can mint attested tokens (its key, the assetbus API, their match)."""

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from assetbus.producers.airflow.identity_checks import AttestationCheck
from assetbus.producers.airflow.store_assets import StateCallerMiddleware


class AssetbusStatePlugin(AirflowPlugin):
    name = "assetbus_state"
    fastapi_root_middlewares: ClassVar[list[dict[str, Any]]] = [
        {"middleware": StateCallerMiddleware, "name": "assetbus state caller"},
        {"middleware": AttestationCheck, "name": "assetbus attested identity check (logged at start)"},
    ]
