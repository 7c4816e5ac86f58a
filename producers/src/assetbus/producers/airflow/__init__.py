"""assetbus for Airflow 3 tasks: `asset.emit()` on Airflow's own Assets, and `AssetbusNotifier`.

Importing this module gives `airflow.sdk.Asset` its `emit()` / `aemit()` methods (see `emit.install`).
Install with `pip install 'assetbus-sdk[airflow]'`; configure `ASSETBUS_API_URL` on the workers.
"""

from assetbus.producers.airflow.attempt import Attempt, attempt_from_context, running_attempt
from assetbus.producers.airflow.credentials import Credentials, TokenRequestFailed, TokenSource, token_source
from assetbus.producers.airflow.emit import aemit, attempt_context, emit, install
from assetbus.producers.airflow.notifier import AssetbusNotifier

install()

__all__ = [
    "AssetbusNotifier",
    "Attempt",
    "Credentials",
    "TokenRequestFailed",
    "TokenSource",
    "aemit",
    "attempt_context",
    "attempt_from_context",
    "emit",
    "install",
    "running_attempt",
    "token_source",
]
