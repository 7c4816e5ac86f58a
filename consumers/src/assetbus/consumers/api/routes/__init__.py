"""The API's routers, one per resource."""

from assetbus.consumers.api.routes.airflow_rules import router as airflow_rules_router
from assetbus.consumers.api.routes.airflow_settings import router as airflow_settings_router
from assetbus.consumers.api.routes.airflow_tokens import router as airflow_tokens_router
from assetbus.consumers.api.routes.asset_state import router as asset_state_router
from assetbus.consumers.api.routes.emit import router as emit_router
from assetbus.consumers.api.routes.runs import router as runs_router
from assetbus.consumers.api.routes.task_state import router as task_state_router

__all__ = ["airflow_rules_router", "airflow_settings_router", "airflow_tokens_router", "asset_state_router",
           "emit_router", "runs_router", "task_state_router"]
