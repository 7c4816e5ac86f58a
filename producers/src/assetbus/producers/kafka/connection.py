"""How to reach Kafka: one connection model for every client (SDK, services, admin, benchmarks).

The bootstrap list is parsed once, here. Task code gets it from the task runner's environment
(`KafkaConnection.from_environ()`); the services read the same fields through pydantic-settings
(environment and `.env`) in `assetbus.consumers.settings`. Secrets are `SecretStr`: they never show in
a repr, a log line or an error message.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from assetbus.producers.kafka.properties import (
    ClientRole,
    parse_properties,
    properties_kwargs,
    read_properties_file,
    validate_properties,
)

__all__ = ["DEFAULT_BOOTSTRAP", "ENV_PREFIX", "KafkaConnection", "SaslMechanism", "SecurityProtocol", "as_connection"]

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"
"""The single local broker that `assetbus infra up` starts."""

ENV_PREFIX = "KAFKA_"
"""Every field is read from `KAFKA_<FIELD>` (for example `KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_SASL_PASSWORD`)."""


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaConnection(BaseModel):
    """Where the brokers are and how to authenticate to them."""

    model_config = ConfigDict(frozen=True, extra="ignore", use_enum_values=False)

    bootstrap_servers: tuple[str, ...] = Field(
        default=(DEFAULT_BOOTSTRAP,),
        description="Brokers to bootstrap from: `host:port` entries, comma-separated in the environment.",
    )
    security_protocol: SecurityProtocol = Field(
        default=SecurityProtocol.PLAINTEXT, description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    sasl_mechanism: SaslMechanism | None = Field(
        default=None, description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; required with a SASL protocol."
    )
    sasl_username: str | None = Field(default=None, description="SASL user name.")
    sasl_password: SecretStr | None = Field(default=None, description="SASL password (never logged).")
    ssl_cafile: str | None = Field(default=None, description="PEM file of the CAs of the brokers' certificates.")
    ssl_certfile: str | None = Field(default=None, description="PEM client certificate, for mutual TLS.")
    ssl_keyfile: str | None = Field(default=None, description="PEM private key of the client certificate.")
    ssl_key_password: SecretStr | None = Field(default=None, description="Password of the client key (never logged).")
    ssl_check_hostname: bool = Field(default=True, description="Check that a broker's certificate names its host.")
    client_id: str = Field(default="assetbus", description="Client id the brokers see (quotas, logs); each "
                           "service appends its name and host (`assetbus-persister-<host>`).")
    properties_file: str | None = Field(default=None, description="A `client.properties`-style file of Kafka "
                                        "client properties passed through to aiokafka (`client.rack`, ...).")
    properties: tuple[tuple[str, str], ...] = Field(
        default=(), description="Kafka client properties passed through to aiokafka (a mapping; in the environment "
        "`key=value` pairs separated by `;`), winning over the file's. An unknown key is refused. Kept as sorted "
        "pairs, so that a connection stays hashable.")

    @model_validator(mode="before")
    @classmethod
    def _gather_properties(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        inline = data.get("properties") or {}
        if isinstance(inline, str):
            inline = parse_properties(inline, separators=";\n")
        path = data.get("properties_file")
        from_file = read_properties_file(path) if path else {}
        merged = validate_properties({**from_file, **dict(inline)})
        return {**data, "properties": tuple(sorted(merged.items()))}

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            entries = tuple(str(entry).strip() for entry in value if str(entry).strip())
            for entry in entries:
                host, sep, port = entry.rpartition(":")
                if not sep or not host or not port.isdigit():
                    raise ValueError(f"bootstrap server {entry!r} is not host:port")
            if not entries:
                raise ValueError("at least one bootstrap server is needed")
            return entries
        return value

    @model_validator(mode="after")
    def _consistent(self) -> KafkaConnection:
        sasl = self.security_protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
        if sasl and (self.sasl_mechanism is None or self.sasl_username is None or self.sasl_password is None):
            raise ValueError(f"{self.security_protocol.value} needs sasl_mechanism, sasl_username and sasl_password")
        if not sasl and self.sasl_mechanism is not None:
            raise ValueError(f"sasl_mechanism is set but security_protocol is {self.security_protocol.value}")
        return self

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> KafkaConnection:
        """The connection named by `KAFKA_*` variables (the task runner's environment by default)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    @property
    def bootstrap(self) -> str:
        """The bootstrap list as one comma-separated string (for messages and other tools)."""
        return ",".join(self.bootstrap_servers)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_tls:
            return None
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        if self.ssl_certfile:
            password = self.ssl_key_password.get_secret_value() if self.ssl_key_password else None
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=password)
        context.check_hostname = self.ssl_check_hostname
        return context

    def for_service(self, service: str, host: str | None = None) -> KafkaConnection:
        """This connection with the client id `<client_id>-<service>-<host>` (quotas and broker logs tell
        services and hosts apart). Already suffixed: unchanged."""
        suffix = f"-{service}-{host or socket.gethostname()}"
        if self.client_id.endswith(suffix):
            return self
        return self.model_copy(update={"client_id": self.client_id + suffix})

    def client_kwargs(self, role: ClientRole | None = None) -> dict[str, Any]:
        """Keyword arguments for an aiokafka client of `role` (None: any client), with the pass-through
        properties that client takes."""
        kwargs: dict[str, Any] = {
            **properties_kwargs(dict(self.properties), role),
            "bootstrap_servers": list(self.bootstrap_servers),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol.value,
        }
        if (context := self.ssl_context()) is not None:
            kwargs["ssl_context"] = context
        if self.sasl_mechanism is not None:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.sasl_password.get_secret_value() if self.sasl_password else None
        return kwargs

    def describe(self) -> str:
        """A one-line, secret-free description for log lines and error messages."""
        auth = f" as {self.sasl_username} ({self.sasl_mechanism})" if self.sasl_mechanism else ""
        return f"{self.bootstrap} over {self.security_protocol.value}{auth}"


def as_connection(value: KafkaConnection | str) -> KafkaConnection:
    """A connection as given, or one for a bootstrap list (`"host:port,host:port"`) with every other field default."""
    return value if isinstance(value, KafkaConnection) else KafkaConnection.model_validate({"bootstrap_servers": value})
