"""Task state and asset state for running tasks, over the execution API, with the task's token: `StateClient` and
`AsyncStateClient` (docs/state.md, "The state SDK").
"""

from assetbus.producers.api_client import API_VERSION
from assetbus.producers.state.clients import (
    Asset,
    AssetState,
    AsyncAsset,
    AsyncAssetState,
    AsyncStateClient,
    AsyncTaskState,
    StateClient,
    TaskState,
)
from assetbus.producers.state.errors import (
    InvalidStateRequest,
    StateConflict,
    StateError,
    StateForbidden,
    StateUnauthorized,
    StateUnavailable,
    ValueTooLarge,
)
from assetbus.producers.state.protocol import StateValue, own_ti_id

__all__ = [
    "API_VERSION",
    "Asset",
    "AssetState",
    "AsyncAsset",
    "AsyncAssetState",
    "AsyncStateClient",
    "AsyncTaskState",
    "InvalidStateRequest",
    "StateClient",
    "StateConflict",
    "StateError",
    "StateForbidden",
    "StateUnauthorized",
    "StateUnavailable",
    "StateValue",
    "TaskState",
    "ValueTooLarge",
    "own_ti_id",
]
