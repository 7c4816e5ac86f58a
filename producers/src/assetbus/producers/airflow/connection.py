"""Where a worker finds assetbus: the Airflow connection `assetbus_default` (type `assetbus`), else the
environment; docs/airflow.md, "Configuration", tables its fields and the fallbacks. It is read through Airflow's
own connection API (`airflow.sdk.Connection`), so it comes from the deployment's secrets backend, and Airflow
masks its secrets in task logs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import ENV_PREFIX, KafkaConnection
from assetbus.producers.kafka.properties import (
    CLIENT_PROPERTIES,
    OWNED_PROPERTIES,
    parse_properties,
    validate_properties,
)

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
    "settings_source",
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
    "sasl.oauthbearer.token.endpoint.url": "sasl_oauth_token_url",
    "sasl.oauthbearer.client.id": "sasl_oauth_client_id",
    "sasl.oauthbearer.client.secret": "sasl_oauth_client_secret",
    "sasl.oauthbearer.scope": "sasl_oauth_scope",
    "sasl.oauthbearer.extensions": "sasl_oauth_extensions",
    "https.ca.location": "sasl_oauth_cafile",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "client.id": "client_id",
}
"""A `kafka_default`-style connection's config dict (librdkafka's names) → KafkaConnection's fields. The
OAUTHBEARER ones (`sasl.oauthbearer.method=oidc`) become the OIDC token provider's settings."""
_PER_CLIENT = frozenset(key for key, owner in OWNED_PROPERTIES.items()
                        if owner.startswith(("ASSETBUS_<SERVICE>", "nothing:")))
"""librdkafka keys that assetbus sets itself for each of its clients (`group.id`, `acks`, ...): a connection
shared with the apache-kafka provider may hold them for that provider's clients; assetbus does not read them."""


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
    (librdkafka's dotted names): the connection's own keys become its fields, the client properties that
    `KAFKA_PROPERTIES` takes (`client.rack`, `request.timeout.ms`, ...) pass through, the keys assetbus sets
    per client (`group.id`, ...) are left to the clients they are for; any other key is refused by name."""
    try:
        values = _fields(config)
        return KafkaConnection.model_validate(values)
    except ValidationError as error:
        problem = error.errors()[0]
        field_name = ".".join(str(part) for part in problem["loc"]) or "kafka"
        message = f"{field_name}: {problem['msg']}"
        if any("." in key for key in config):  # said in the names the connection uses, not the environment's
            for key, name in _LIBRDKAFKA_KEYS.items():
                message = message.replace(ENV_PREFIX + name.upper(), key)
        raise InvalidConnection(f"{where}: {message}") from None
    except ValueError as error:
        raise InvalidConnection(f"{where}: {error}") from None


def _fields(config: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for key, value in config.items():
        if key in _LIBRDKAFKA_KEYS:
            values[_LIBRDKAFKA_KEYS[key]] = value
        elif key == "sasl.oauthbearer.method":
            if str(value).lower() != "oidc":
                raise ValueError(f"sasl.oauthbearer.method={value!r}: assetbus takes OAUTHBEARER tokens from an OIDC "
                                 f"token endpoint (`oidc`, with sasl.oauthbearer.token.endpoint.url, .client.id and "
                                 f".client.secret) or MSK IAM (`sasl_oauth_provider: aws-msk-iam`)")
            values["sasl_oauth_provider"] = "oidc"
        elif key in CLIENT_PROPERTIES:
            properties[key] = str(value).lower() if isinstance(value, bool) else str(value)
        elif key in _PER_CLIENT:
            continue
        elif "." in key:
            validate_properties({key: str(value)})  # names the setting that owns the key, or lists what passes
        elif key not in KafkaConnection.model_fields:
            raise ValueError(f"unknown Kafka setting {key!r}; the connection's fields are: "
                             + ", ".join(sorted(KafkaConnection.model_fields)))
        else:
            values[key] = value
    if isinstance(values.get("security_protocol"), str):
        values["security_protocol"] = values["security_protocol"].upper()
    if isinstance(values.get("sasl_oauth_extensions"), str):  # librdkafka's `k1=v1,k2=v2`
        values["sasl_oauth_extensions"] = values["sasl_oauth_extensions"].replace(",", ";")
    if "ssl.endpoint.identification.algorithm" in config:
        values["ssl_check_hostname"] = str(config["ssl.endpoint.identification.algorithm"]).lower() == "https"
    if properties:
        inline = values.get("properties") or {}
        inline = parse_properties(inline, separators=";\n") if isinstance(inline, str) else dict(inline)
        values["properties"] = {**inline, **properties}
    return values


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


def settings_source(access: WorkerAccess) -> str:
    """Where a worker's emitter takes Kafka and the topic prefix from (the order `credentials` follows), for
    messages: the connection's extras, this process's environment, or the assetbus API's answer."""
    env = os.environ
    kafka = _first((access.kafka is not None, f"the `kafka` (or `kafka_conn_id`) extra of {access.source}"),
                   (bool(env.get("KAFKA_BOOTSTRAP_SERVERS")),
                    "KAFKA_BOOTSTRAP_SERVERS and the other KAFKA_* variables"),
                   default=f"the brokers the assetbus API at {access.api_url} names ({access.source} names no Kafka)")
    prefix = _first((access.topic_prefix is not None, f"the `topic_prefix` extra of {access.source}"),
                    (bool(env.get("ASSETBUS_TOPIC_PREFIX")), "ASSETBUS_TOPIC_PREFIX"),
                    default=f"the assetbus API at {access.api_url}")
    return f"Kafka from {kafka}; topic prefix from {prefix}"


def _first(*choices: tuple[bool, str], default: str) -> str:
    return next((said for holds, said in choices if holds), default)


def default_conn_id() -> str:
    """The connection workers use: Airflow's `[assetbus] conn_id` (the provider's config), else `assetbus_default`."""
    try:
        from airflow.sdk.configuration import conf
    except ImportError:
        return CONN_ID
    return str(conf.get("assetbus", "conn_id", fallback=CONN_ID) or CONN_ID)
