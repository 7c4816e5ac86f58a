"""The operators' web page (`/ui`), shipped as static files in the package: no build step, no Node."""

from assetbus.consumers.api.ui.routes import api as ui_api_router
from assetbus.consumers.api.ui.routes import router as ui_router

__all__ = ["ui_api_router", "ui_router"]
