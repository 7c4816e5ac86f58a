"""The execution HTTP API: task state, asset state and HTTP emission, behind bearer tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.api.app import create_api
    from assetbus.consumers.api.config import ApiConfig
    from assetbus.consumers.api.errors import ApiError, ApiErrorCode, ErrorBody
    from assetbus.consumers.api.models import BODY_MAX_BYTES, VALUE_MAX_BYTES
    from assetbus.consumers.api.versioning import API_VERSIONS, LATEST_VERSION, VERSION_HEADER
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    "API_VERSIONS",
    "BODY_MAX_BYTES",
    "LATEST_VERSION",
    "VALUE_MAX_BYTES",
    "VERSION_HEADER",
    "ApiConfig",
    "ApiError",
    "ApiErrorCode",
    "ErrorBody",
    "create_api",
]
