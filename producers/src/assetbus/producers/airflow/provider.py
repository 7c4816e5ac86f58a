"""The Airflow provider's metadata (`apache_airflow_provider` entry point of assetbus-sdk), as Airflow's
ProvidersManager reads it: the `assetbus` connection type with its typed `conn-fields` (kept in the
connection's extra) and `ui-field-behaviour`, read without importing the hook; the hook, operator, notifier,
triggers, sensor, config section and common-messaging queue. Importable without Airflow.
"""

from __future__ import annotations

from typing import Any

from assetbus.producers.distributions import installed_version

DISTRIBUTION = "assetbus-sdk"
INTEGRATION = "assetbus"
CONN_FIELDS: dict[str, dict[str, Any]] = {
    "topic_prefix": {
        "label": "Topic prefix",
        "description": "Prefix of the assetbus topics (<prefix>.emissions, ...); empty: the API's.",
        "schema": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9._-]+$", "maxLength": 200},
    },
    "kafka_conn_id": {
        "label": "Kafka connection id",
        "description": "An Airflow connection holding the Kafka client settings (a kafka_default-style config, "
                       "or an assetbus `kafka` extra); empty: the `kafka` extra, the environment, or the API's.",
        "schema": {"type": ["string", "null"]},
    },
}
"""The connection's own fields, typed; Airflow keeps them in the connection's extra under these names
(`connection.py` reads them there)."""
UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden-fields": ["schema", "login", "port"],
    "relabeling": {"host": "assetbus API URL", "password": "Worker credential"},
    "placeholders": {"host": "http://assetbus-api:8321", "password": "the output of `assetbus token worker`",
                     "extra": '{"kafka": {"bootstrap_servers": "kafka:9092"}}'},
}


def get_provider_info() -> dict[str, Any]:
    """The provider info Airflow validates against its provider_info schema."""
    return {
        "package-name": DISTRIBUTION,
        "name": "assetbus",
        "description": "Emit asset readiness from Airflow tasks and callbacks through assetbus (Kafka and "
                       "PostgreSQL): receipts that mean stored, dedupe that survives retries, per-partition runs.",
        "versions": [installed_version(DISTRIBUTION) or "0.0.0"],
        "integrations": [{"integration-name": INTEGRATION, "tags": ["service"]}],
        "connection-types": [{"hook-class-name": "assetbus.producers.airflow.hook.AssetbusHook",
                              "connection-type": "assetbus", "hook-name": "assetbus",
                              "conn-fields": CONN_FIELDS, "ui-field-behaviour": UI_FIELD_BEHAVIOUR}],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": ["assetbus.producers.airflow.hook"]}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": ["assetbus.producers.airflow.operator"]}],
        "notifications": ["assetbus.producers.airflow.notifier.AssetbusNotifier"],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": ["assetbus.producers.airflow.triggers"]}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": ["assetbus.producers.airflow.sensors"]}],
        "queues": ["assetbus.producers.airflow.queues.AssetbusMessageQueueProvider"],
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
