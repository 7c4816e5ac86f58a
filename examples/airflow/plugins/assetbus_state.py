"""An Airflow plugin for the api-server that runs `AssetbusStoreBackend`: it tells the backend which task
instance asks for an asset's state, so that only tasks registered with the asset reach it."""

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from assetbus.producers.airflow.store_assets import StateCallerMiddleware


class AssetbusStatePlugin(AirflowPlugin):
    name = "assetbus_state"
    fastapi_root_middlewares: ClassVar[list[dict[str, Any]]] = [
        {"middleware": StateCallerMiddleware, "name": "assetbus state caller"},
    ]
