"""Kafka client properties passed through to aiokafka: `client.rack=...` in, `client_rack=...` out.

Only the keys of `CLIENT_PROPERTIES` are passed; one assetbus sets itself names the setting that owns it, any
other is refused (docs/kafka.md, "Client properties").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["CLIENT_PROPERTIES", "COMPRESSION_TYPES", "OWNED_PROPERTIES", "ClientProperty", "ClientRole",
           "check_compression", "parse_properties", "properties_kwargs", "read_properties_file", "validate_properties"]

ClientRole = Literal["producer", "consumer", "admin"]
ALL: frozenset[ClientRole] = frozenset({"producer", "consumer", "admin"})
CLIENTS: frozenset[ClientRole] = frozenset({"producer", "consumer"})


@dataclass(frozen=True)
class ClientProperty:
    """One Kafka client property: the aiokafka keyword it becomes, its type, and the clients that take it."""

    kwarg: str
    kind: type[int] | type[str] | type[bool]
    roles: frozenset[ClientRole]


CLIENT_PROPERTIES: dict[str, ClientProperty] = {
    "metadata.max.age.ms": ClientProperty("metadata_max_age_ms", int, ALL),
    "retry.backoff.ms": ClientProperty("retry_backoff_ms", int, ALL),
    "connections.max.idle.ms": ClientProperty("connections_max_idle_ms", int, ALL),
    "sasl.kerberos.service.name": ClientProperty("sasl_kerberos_service_name", str, ALL),
    "sasl.kerberos.domain.name": ClientProperty("sasl_kerberos_domain_name", str, ALL),
    "request.timeout.ms": ClientProperty("request_timeout_ms", int, CLIENTS),
    "client.rack": ClientProperty("client_rack", str, frozenset({"consumer"})),
    "fetch.min.bytes": ClientProperty("fetch_min_bytes", int, frozenset({"consumer"})),
    "fetch.max.bytes": ClientProperty("fetch_max_bytes", int, frozenset({"consumer"})),
    "check.crcs": ClientProperty("check_crcs", bool, frozenset({"consumer"})),
    "max.request.size": ClientProperty("max_request_size", int, frozenset({"producer"})),
    "compression.type": ClientProperty("compression_type", str, frozenset({"producer"})),
}
"""The pass-through properties, by their Kafka name."""

OWNED_PROPERTIES: dict[str, str] = {
    "bootstrap.servers": "KAFKA_BOOTSTRAP_SERVERS",
    "security.protocol": "KAFKA_SECURITY_PROTOCOL",
    "sasl.mechanism": "KAFKA_SASL_MECHANISM",
    "sasl.jaas.config": "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD (OAUTHBEARER: KAFKA_SASL_OAUTH_CLIENT_ID, "
                        "KAFKA_SASL_OAUTH_CLIENT_SECRET and KAFKA_SASL_OAUTH_SCOPE)",
    "sasl.login.callback.handler.class": "KAFKA_SASL_OAUTH_PROVIDER (oidc or aws-msk-iam)",
    "sasl.oauthbearer.token.endpoint.url": "KAFKA_SASL_OAUTH_TOKEN_URL",
    "sasl.oauthbearer.scope": "KAFKA_SASL_OAUTH_SCOPE",
    "sasl.oauthbearer.client.credentials.client.id": "KAFKA_SASL_OAUTH_CLIENT_ID",
    "sasl.oauthbearer.client.credentials.client.secret": "KAFKA_SASL_OAUTH_CLIENT_SECRET",
    "ssl.truststore.location": "KAFKA_SSL_CAFILE (a PEM file)",
    "ssl.keystore.location": "KAFKA_SSL_CERTFILE and KAFKA_SSL_KEYFILE (PEM files)",
    "ssl.endpoint.identification.algorithm": "KAFKA_SSL_CHECK_HOSTNAME",
    "client.id": "KAFKA_CLIENT_ID (each service appends its name and host)",
    "group.id": "ASSETBUS_<SERVICE>_GROUP_ID",
    "group.instance.id": "ASSETBUS_<SERVICE>_GROUP_INSTANCE_ID",
    "session.timeout.ms": "ASSETBUS_<SERVICE>_SESSION_TIMEOUT_MS",
    "heartbeat.interval.ms": "ASSETBUS_<SERVICE>_HEARTBEAT_INTERVAL_MS",
    "max.poll.records": "ASSETBUS_<SERVICE>_MAX_RECORDS",
    "acks": "nothing: assetbus always sends with acks=all",
    "enable.idempotence": "nothing: assetbus producers are always idempotent",
    "enable.auto.commit": "nothing: assetbus commits offsets only after the database commit",
}
"""Keys assetbus sets itself, with the setting to use instead."""

COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
"""The values of `compression.type` that aiokafka's producer takes (`none`: no compression)."""


def check_compression(value: str, setting: str) -> None:
    """Refuse a compression type that aiokafka does not know, or whose codec is not installed (snappy, lz4
    and zstd need cramjam), with a ValueError naming `setting` and the package to install."""
    if value not in COMPRESSION_TYPES:
        raise ValueError(f"{setting} must be one of {', '.join(COMPRESSION_TYPES)}, not {value!r}")
    from aiokafka import codec  # what aiokafka's producer checks when it starts

    installed = {"snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd}.get(value)
    if installed is not None and not installed():
        raise ValueError(f"{setting} is {value}, whose codec is not installed: pip install cramjam "
                         f"(aiokafka's {value} extra), or choose gzip or none")


def parse_properties(text: str, *, separators: str = "\n") -> dict[str, str]:
    """`key=value` (or `key: value`) entries; blank lines and `#`/`!` comments are skipped."""
    entries: dict[str, str] = {}
    for chunk in text.splitlines() if separators == "\n" else re.split(f"[{re.escape(separators)}]", text):
        line = chunk.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            raise ValueError(f"Kafka client property {line!r} is not key=value")
        entries[line[:cut].strip()] = line[cut + 1:].strip()
    return entries


def read_properties_file(path: str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read KAFKA_PROPERTIES_FILE {path}: {error.strerror or error}") from None
    return parse_properties(text)


def validate_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties as given, if every key is known and every value has its type; else a ValueError naming it."""
    for key, value in properties.items():
        if key in OWNED_PROPERTIES:
            raise ValueError(f"Kafka client property {key!r} is set by assetbus; use {OWNED_PROPERTIES[key]}")
        known = CLIENT_PROPERTIES.get(key)
        if known is None:
            raise ValueError(f"unknown Kafka client property {key!r}; assetbus passes through: "
                             + ", ".join(sorted(CLIENT_PROPERTIES)))
        _convert(key, known, value)
        if key == "compression.type":
            check_compression(value, f"Kafka client property {key!r}")
    return dict(properties)


def _convert(key: str, known: ClientProperty, value: str) -> int | str | bool:
    if known.kind is int:
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"Kafka client property {key!r} must be an integer, not {value!r}") from None
    if known.kind is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(f"Kafka client property {key!r} must be true or false, not {value!r}")
        return value.lower() == "true"
    return value


def properties_kwargs(properties: Mapping[str, str], role: ClientRole | None) -> dict[str, int | str | bool]:
    """aiokafka keywords for a client of `role` (None: only those every kind of client takes)."""
    wanted = ALL if role is None else frozenset({role})
    kwargs: dict[str, int | str | bool] = {}
    for key, value in properties.items():
        known = CLIENT_PROPERTIES[key]
        if key == "compression.type" and value == "none":  # aiokafka's spelling of it is None, its default
            continue
        if wanted <= known.roles:
            kwargs[known.kwarg] = _convert(key, known, value)
    return kwargs
