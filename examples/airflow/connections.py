"""The Airflow connections a deployment gives its workers, as `airflow connections add --conn-json` (or
`AIRFLOW_CONN_<ID>`, or a secrets backend) takes them. tests/integration/airflow/test_provider.py adds
these to a real Airflow and emits through them.
"""

from __future__ import annotations

import json


def assetbus_default(api_url: str, worker_credential: str, topic_prefix: str) -> str:
    """The assetbus connection, with Kafka by reference to a kafka_default-style connection."""
    return json.dumps({
        "conn_type": "assetbus",
        "host": api_url,  # e.g. http://assetbus-api:8321
        "password": worker_credential,  # the output of `assetbus token worker`
        "extra": {"topic_prefix": topic_prefix, "kafka_conn_id": "kafka_default"},
    })


def kafka_default(bootstrap_servers: str) -> str:
    """The Kafka connection, in the apache-kafka provider's shape (librdkafka's names)."""
    return json.dumps({
        "conn_type": "kafka",
        "extra": {
            "bootstrap.servers": bootstrap_servers,
            # with SASL over TLS:
            # "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            # "sasl.username": "assetbus-worker", "sasl.password": "...", "ssl.ca.location": "/etc/ssl/ca.pem",
        },
    })
