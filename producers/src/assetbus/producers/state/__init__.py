"""Task state and asset state for running tasks, over the execution API, with the task's token.

    with StateClient(api_url, token) as state:
        done = int(state.task_state.get("last_batch", "-1"))
        state.task_state.set("last_batch", str(done + 1))
        state.asset("orders").state.set("watermark", "2026-10-01")

`AsyncStateClient` has the same shape with `await`.
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
