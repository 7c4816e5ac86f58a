"""The Airflow provider's metadata (`apache_airflow_provider` entry point of assetbus-sdk).

Airflow's ProvidersManager reads it: `airflow providers list` shows assetbus, the connection form offers
the `assetbus` connection type (its hook gives the form's labels and `test_connection`), and the
notifier, the triggers (`AssetbusReadinessTrigger` for AssetWatchers), the sensor and the config
section are listed; common-messaging's `MessageQueueTrigger` finds the `assetbus` queue among `queues`.
Importable without Airflow.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

DISTRIBUTION = "assetbus-sdk"
HOOK = "assetbus.producers.airflow.hook.AssetbusHook"
OPERATOR = "assetbus.producers.airflow.operator.AssetbusEmitOperator"
NOTIFIER = "assetbus.producers.airflow.notifier.AssetbusNotifier"
TRIGGERS = "assetbus.producers.airflow.triggers"
SENSORS = "assetbus.producers.airflow.sensors"
QUEUE_PROVIDER = "assetbus.producers.airflow.queues.AssetbusMessageQueueProvider"
INTEGRATION = "assetbus"


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - a source tree without its metadata
        return "0.0.0"


def get_provider_info() -> dict[str, Any]:
    """The provider info Airflow validates against its provider_info schema."""
    return {
        "package-name": DISTRIBUTION,
        "name": "assetbus",
        "description": "Emit asset readiness from Airflow tasks and callbacks through assetbus (Kafka and "
                       "PostgreSQL): receipts that mean stored, dedupe that survives retries, per-partition runs.",
        "versions": [_version()],
        "integrations": [{"integration-name": INTEGRATION, "tags": ["service"]}],
        "connection-types": [{"hook-class-name": HOOK, "connection-type": "assetbus"}],
        "notifications": [NOTIFIER],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": [TRIGGERS]}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": [SENSORS]}],
        "queues": [QUEUE_PROVIDER],
        "config": {
            "assetbus": {
                "description": "assetbus on Airflow workers.",
                "options": {
                    "conn_id": {
                        "description": "The Airflow connection (type assetbus) that workers read the assetbus API, "
                                       "the worker credential, the topic prefix and Kafka from.",
                        "version_added": "0.2.0",
                        "type": "string",
                        "example": "assetbus_default",
                        "default": "assetbus_default",
                    },
                },
            },
        },
    }
