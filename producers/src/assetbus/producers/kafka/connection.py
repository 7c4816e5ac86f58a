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
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from assetbus.producers.kafka.properties import (
    ClientRole,
    parse_properties,
    properties_kwargs,
    read_properties_file,
    validate_properties,
)

if TYPE_CHECKING:  # aiokafka is imported by the clients, not by reading settings (`assetbus --help` stays light)
    from assetbus.producers.kafka.oauth import CachingTokenProvider

__all__ = ["DEFAULT_BOOTSTRAP", "ENV_PREFIX", "KafkaConnection", "OAuthProvider", "SaslMechanism", "SecurityProtocol",
           "as_connection"]

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"
"""The single local broker that `assetbus infra up` starts."""

ENV_PREFIX = "KAFKA_"
"""Every field is read from `KAFKA_<FIELD>` (for example `KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_SASL_PASSWORD`)."""


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
OAuthProvider = Literal["oidc", "aws-msk-iam"]
"""Where OAUTHBEARER tokens come from: an OIDC token endpoint (client credentials) or MSK IAM signing."""


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
        default=None, description="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; required with a SASL protocol."
    )
    sasl_username: str | None = Field(default=None, description="SASL user name.")
    sasl_password: SecretStr | None = Field(default=None, description="SASL password (never logged).")
    sasl_oauth_provider: OAuthProvider = Field(default="oidc", description="OAUTHBEARER tokens from `oidc` (an "
                                               "OIDC token endpoint, client credentials) or `aws-msk-iam` (MSK IAM, "
                                               "the `assetbus-sdk[msk]` extra).")
    sasl_oauth_token_url: str | None = Field(default=None, description="OIDC token endpoint (OAUTHBEARER, oidc).")
    sasl_oauth_client_id: str | None = Field(default=None, description="OIDC client id (OAUTHBEARER, oidc).")
    sasl_oauth_client_secret: SecretStr | None = Field(default=None, description="OIDC client secret (OAUTHBEARER, "
                                                       "oidc; never logged).")
    sasl_oauth_scope: str | None = Field(default=None, description="Scope asked of the token endpoint (OAUTHBEARER, "
                                         "oidc); unset: the provider's default.")
    sasl_oauth_extensions: tuple[tuple[str, str], ...] = Field(
        default=(), description="SASL extensions sent with the token (in the environment `key=value` pairs "
        "separated by `;`), e.g. Confluent Cloud's `logicalCluster=lkc-...;identityPoolId=pool-...`.")
    sasl_oauth_cafile: str | None = Field(default=None, description="PEM file of the CAs of the token endpoint's "
                                          "certificate; unset: the system's CAs.")
    sasl_oauth_aws_region: str | None = Field(default=None, description="AWS region of the MSK cluster "
                                              "(OAUTHBEARER, aws-msk-iam).")
    sasl_oauth_aws_profile: str | None = Field(default=None, description="AWS profile to sign MSK IAM tokens with; "
                                               "unset: the default credential chain.")
    sasl_oauth_aws_role_arn: str | None = Field(default=None, description="IAM role to assume to sign MSK IAM "
                                                "tokens; unset: the default credential chain.")
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

    @field_validator("sasl_oauth_extensions", mode="before")
    @classmethod
    def _extensions(cls, value: object) -> object:
        if isinstance(value, str):
            value = parse_properties(value, separators=";\n")
        if isinstance(value, Mapping):
            value = tuple(sorted((str(k), str(v)) for k, v in value.items()))
        return value

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
        if sasl and self.sasl_mechanism == "OAUTHBEARER":
            needed = {"oidc": ("sasl_oauth_token_url", "sasl_oauth_client_id", "sasl_oauth_client_secret"),
                      "aws-msk-iam": ("sasl_oauth_aws_region",)}[self.sasl_oauth_provider]
            missing = [name for name in needed if getattr(self, name) is None]
            if missing:
                raise ValueError(f"OAUTHBEARER ({self.sasl_oauth_provider}) needs "
                                 + ", ".join(ENV_PREFIX + name.upper() for name in missing))
        elif sasl and (self.sasl_mechanism is None or self.sasl_username is None or self.sasl_password is None):
            raise ValueError(f"{self.security_protocol.value} needs sasl_mechanism, sasl_username and sasl_password")
        if not sasl and self.sasl_mechanism is not None:
            raise ValueError(f"sasl_mechanism is set but security_protocol is {self.security_protocol.value}")
        return self

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> KafkaConnection:
        """The connection named by `KAFKA_*` variables (the task runner's environment by default)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {name: raw for name in cls.model_fields if (raw := env.get(ENV_PREFIX + name.upper()))}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    @property
    def bootstrap(self) -> str:
        """The bootstrap list as one comma-separated string (for messages and other tools)."""
        return ",".join(self.bootstrap_servers)

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.security_protocol not in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
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
        if self.sasl_mechanism == "OAUTHBEARER":
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_oauth_token_provider"] = self.token_provider()
        elif self.sasl_mechanism is not None:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.sasl_password.get_secret_value() if self.sasl_password else None
        return kwargs

    def token_provider(self) -> CachingTokenProvider:
        """The OAUTHBEARER token provider of these settings, shared by every client of the process that has
        the same ones (one token, refreshed before it expires)."""
        from assetbus.producers.kafka.oauth import client_credentials_provider, msk_iam_provider

        if self.sasl_oauth_provider == "aws-msk-iam":
            assert self.sasl_oauth_aws_region is not None  # checked by the model
            return msk_iam_provider(self.sasl_oauth_aws_region, self.sasl_oauth_aws_profile,
                                    self.sasl_oauth_aws_role_arn)
        assert self.sasl_oauth_token_url and self.sasl_oauth_client_id and self.sasl_oauth_client_secret
        return client_credentials_provider(self.sasl_oauth_token_url, self.sasl_oauth_client_id,
                                           self.sasl_oauth_client_secret.get_secret_value(), self.sasl_oauth_scope,
                                           self.sasl_oauth_extensions, self.sasl_oauth_cafile or True)

    def describe(self) -> str:
        """A one-line, secret-free description for log lines and error messages."""
        if self.sasl_mechanism == "OAUTHBEARER" and self.sasl_oauth_provider == "aws-msk-iam":
            auth = f" with MSK IAM ({self.sasl_oauth_aws_region})"
        elif self.sasl_mechanism == "OAUTHBEARER":
            auth = (f" as {self.sasl_oauth_client_id} (OAUTHBEARER from "
                    f"{urlsplit(self.sasl_oauth_token_url or '').hostname})")
        else:
            auth = f" as {self.sasl_username} ({self.sasl_mechanism})" if self.sasl_mechanism else ""
        return f"{self.bootstrap} over {self.security_protocol.value}{auth}"


def as_connection(value: KafkaConnection | str) -> KafkaConnection:
    """A connection as given, or one for a bootstrap list (`"host:port,host:port"`) with every other field default."""
    return value if isinstance(value, KafkaConnection) else KafkaConnection.model_validate({"bootstrap_servers": value})
