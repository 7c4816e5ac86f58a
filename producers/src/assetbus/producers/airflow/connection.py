"""Where a worker finds assetbus: the Airflow connection `assetbus_default` (type `assetbus`).

The connection is read through Airflow's own connection API (`airflow.sdk.Connection`), so it comes
from the deployment's secrets backend: in a task through the supervisor and Airflow's execution API,
in a DAG-level callback through the dag-processor. Airflow masks its password and the extras whose
names say secret (`sasl_password`, `ssl_key_password`) in task logs. Its fields:

- host: the assetbus execution API's URL (a host without a scheme gets the schema, else `http`);
- password: the worker credential (`assetbus token worker`);
- extra `topic_prefix`: the topic prefix (default: the API's);
- extra `kafka`: the Kafka connection inline (`KafkaConnection`'s fields: `bootstrap_servers`,
  `security_protocol`, `sasl_mechanism`, `sasl_username`, `sasl_password`, `ssl_cafile`, ...), or
  extra `kafka_conn_id`: another Airflow connection holding it, either an `assetbus`-style `kafka`
  extra or a `kafka_default`-style config dict (`bootstrap.servers`, `security.protocol`,
  `sasl.mechanism(s)`, `sasl.username`, `sasl.password`, `ssl.ca.location`, ...).
  Without either, the brokers the API names (with `KAFKA_*` from the environment as a fallback).

When Airflow has no such connection (or is not installed), the environment is the fallback:
`ASSETBUS_API_URL`, `ASSETBUS_AIRFLOW_WORKER_TOKEN`, `ASSETBUS_TOPIC_PREFIX` and `KAFKA_*`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import KafkaConnection

__all__ = [
    "CONN_ID",
    "CONN_TYPE",
    "DEFAULT_API_URL",
    "ENV_API_URL",
    "ENV_WORKER_TOKEN",
    "InvalidConnection",
    "WorkerAccess",
    "default_conn_id",
    "kafka_from_config",
    "worker_access",
]

CONN_ID = "assetbus_default"
CONN_TYPE = "assetbus"
ENV_API_URL = "ASSETBUS_API_URL"
ENV_WORKER_TOKEN = "ASSETBUS_AIRFLOW_WORKER_TOKEN"
DEFAULT_API_URL = "http://127.0.0.1:8321"

_LIBRDKAFKA_KEYS = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "client.id": "client_id",
}
"""A `kafka_default`-style connection's config dict (librdkafka's names) → KafkaConnection's fields."""


class InvalidConnection(EmitterError):
    """The assetbus connection (or the Kafka connection it names) cannot be used as it stands."""


@dataclass(frozen=True)
class WorkerAccess:
    """The API a worker asks for tokens, the credential it proves being a worker with (None: none found),
    and, when the connection says so, Kafka and the topic prefix (None: the API's answer decides)."""

    api_url: str
    credential: str | None = field(default=None, repr=False)
    source: str = "environment"
    """Where they were found: `connection assetbus_default`, or `environment`."""
    kafka: KafkaConnection | None = None
    topic_prefix: str | None = None


def _airflow_connection(conn_id: str) -> Any | None:
    """The Airflow connection `conn_id`, or None when Airflow is not installed or does not define it."""
    try:
        from airflow.sdk import Connection
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:
        return None
    try:
        return Connection.get(conn_id)
    except AirflowNotFoundException:
        return None


def _url(connection: Any) -> str | None:
    host = getattr(connection, "host", None)
    if not host:
        return None
    if "://" not in host:
        port = getattr(connection, "port", None)
        host = f"{getattr(connection, 'schema', None) or 'http'}://{host}" + (f":{port}" if port else "")
    return str(host)


def _extra(connection: Any, conn_id: str) -> dict[str, Any]:
    raw = getattr(connection, "extra", None)
    if not raw:
        return {}
    try:
        extra = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (TypeError, ValueError) as error:
        raise InvalidConnection(f"the extra of connection {conn_id} is not a JSON object: {error}") from None
    if not isinstance(extra, dict):
        raise InvalidConnection(f"the extra of connection {conn_id} is not a JSON object")
    return extra


def kafka_from_config(config: Mapping[str, Any], where: str) -> KafkaConnection:
    """A KafkaConnection from an inline `kafka` extra (our field names) or a kafka_default-style config dict
    (librdkafka's dotted names; the ones assetbus has no use for, such as `group.id`, are ignored)."""
    values = {_LIBRDKAFKA_KEYS.get(key, key): value for key, value in config.items()
              if key in _LIBRDKAFKA_KEYS or "." not in key}
    if isinstance(values.get("security_protocol"), str):
        values["security_protocol"] = values["security_protocol"].upper()
    try:
        return KafkaConnection.model_validate(values)
    except ValidationError as error:
        problem = error.errors()[0]
        field_name = ".".join(str(part) for part in problem["loc"]) or "kafka"
        raise InvalidConnection(f"{where}: {field_name}: {problem['msg']}") from None


def _kafka(extra: Mapping[str, Any], conn_id: str) -> KafkaConnection | None:
    inline, reference = extra.get("kafka"), extra.get("kafka_conn_id")
    if inline is not None and reference is not None:
        raise InvalidConnection(f"connection {conn_id} sets both `kafka` and `kafka_conn_id` in its extra: "
                                f"keep one")
    if inline is not None:
        if not isinstance(inline, Mapping):
            raise InvalidConnection(f"the `kafka` extra of connection {conn_id} is not a JSON object")
        return kafka_from_config(inline, f"the `kafka` extra of connection {conn_id}")
    if reference is None:
        return None
    referenced = _airflow_connection(str(reference))
    if referenced is None:
        raise InvalidConnection(f"connection {conn_id} names the Kafka connection {reference!r} "
                                f"(`kafka_conn_id`), which Airflow does not know")
    config = _extra(referenced, str(reference))
    if "kafka" in config and isinstance(config["kafka"], Mapping):  # another assetbus connection
        config = dict(config["kafka"])
    if "bootstrap.servers" not in config and "bootstrap_servers" not in config and getattr(referenced, "host", None):
        port = getattr(referenced, "port", None)
        config["bootstrap_servers"] = f"{referenced.host}:{port}" if port else referenced.host
    return kafka_from_config(config, f"the Kafka connection {reference}")


def worker_access(conn_id: str = CONN_ID) -> WorkerAccess:
    """Read now (a rotated credential is picked up by the next token request): the connection's host,
    password and extras, the API's URL and the credential each falling back to the environment."""
    connection = _airflow_connection(conn_id)
    env_url = os.environ.get(ENV_API_URL) or DEFAULT_API_URL
    env_credential = os.environ.get(ENV_WORKER_TOKEN) or None
    if connection is None:
        return WorkerAccess(env_url.rstrip("/"), env_credential)
    extra = _extra(connection, conn_id)
    prefix = extra.get("topic_prefix")
    return WorkerAccess((_url(connection) or env_url).rstrip("/"),
                        getattr(connection, "password", None) or env_credential, f"connection {conn_id}",
                        kafka=_kafka(extra, conn_id), topic_prefix=str(prefix) if prefix else None)


def default_conn_id() -> str:
    """The connection workers use: Airflow's `[assetbus] conn_id` (the provider's config), else `assetbus_default`."""
    try:
        from airflow.sdk.configuration import conf
    except ImportError:
        return CONN_ID
    return str(conf.get("assetbus", "conn_id", fallback=CONN_ID) or CONN_ID)
