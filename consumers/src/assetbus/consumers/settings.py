"""The services' settings: one pydantic-settings model per service, each default written once.

A field is set by keyword (`assetbus run <service> --option`), else `ASSETBUS_<SERVICE>_<FIELD>`, else a
`.env` line (docs/services.md). The models validate their values, so nothing downstream clamps or re-checks
them. Connection values (Kafka, database, token keys, topic prefix) are given by the edge that builds the
model (`assetbus.settings.Settings`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.producers.kafka import ENV_PREFIX, ConsumerSettings, KafkaConnection, RetryPolicy
from assetbus.schemas import Topics

__all__ = ["ENV_FILE", "BackoffSettings", "ConsumerGroupSettings", "KafkaSettings", "ProbeSettings",
           "ServiceSettings", "VerificationKeys", "service_settings_config"]

ENV_FILE = ".env"


def service_settings_config(env_prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=env_prefix, env_file=ENV_FILE, extra="ignore", frozen=True,
                              validate_default=True, populate_by_name=True)


class ServiceSettings(BaseSettings):
    """Base of the service models: `env_prefix` names the service, e.g. `ASSETBUS_PERSISTER_`."""

    model_config = service_settings_config("ASSETBUS_")

    kafka: KafkaConnection = Field(description="How to reach Kafka: brokers, TLS, SASL (given by the edge from "
                                   "KAFKA_BOOTSTRAP_SERVERS and the other KAFKA_* settings).")
    startup_timeout_s: float = Field(default=60.0, gt=0, description="How long to wait for Kafka and "
                                     "PostgreSQL at start-up (logging each attempt) before exiting with one "
                                     "error line and code 75.")
    database_url: str = Field(description="SQLAlchemy URL of PostgreSQL (given by the edge from DATABASE_URL).")
    topics: Topics = Field(default_factory=Topics, description="Topic names (prefix from ASSETBUS_TOPIC_PREFIX).")
    create_topics: bool = Field(default=True, description="Create missing topics (given by the edge from "
                                "ASSETBUS_CREATE_TOPICS); false: a missing topic stops the service at start-up, "
                                "named, with how to create it.")

    @field_validator("database_url")
    @classmethod
    def _database_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("DATABASE_URL is empty: give the URL of PostgreSQL")
        return value


class ProbeSettings(BaseModel):
    """Where a service serves `/metrics`, `/healthz` and `/readyz` (a mixin of the service models)."""

    metrics_port: int | None = Field(default=None, ge=0, le=65535, description="Serve /metrics, /healthz and "
                                     "/readyz on this port (0: any free port); unset: no endpoint.")
    metrics_host: str = Field(default="0.0.0.0", description="Address the metrics and probes endpoint binds to.")


class BackoffSettings(BaseModel):
    """How long a service waits between tries of what is away (the database, Airflow): a mixin of the service
    models; `retry_policy()` is the toolkit's policy from them."""

    backoff_initial_s: float = Field(default=0.2, gt=0, description="First wait while a dependency is away.")
    backoff_max_s: float = Field(default=5.0, gt=0, description="Longest wait while a dependency is away.")

    @model_validator(mode="after")
    def _ordered_backoff(self) -> Any:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("backoff_max_s must not be below backoff_initial_s")
        return self

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(initial_s=self.backoff_initial_s, max_s=self.backoff_max_s)


class ConsumerGroupSettings(BaseModel):
    """The consumer-group knobs every consuming service has (a mixin of the service models); a service changes a
    default by declaring the field again."""

    service: ClassVar[str] = "consumer"
    group_id: str = Field(default="", description="Consumer group shared by this service's processes; default "
                          "`<topic prefix>-<service>`. A new group re-reads its topic from the start.")
    group_instance_id: str | None = Field(default=None, min_length=1, description="Static membership "
                                          "(group.instance.id): unique per process, stable across its restarts "
                                          "(e.g. the pod name); a restart within the session timeout causes no "
                                          "rebalance.")
    max_records: int = Field(default=1000, ge=1, description="Largest batch taken from Kafka; its offsets are "
                             "committed together.")
    batch_timeout_ms: int = Field(default=50, ge=0, description="How long to wait to fill a batch.")
    fetch_max_wait_ms: int = Field(default=10, ge=0, description="The broker's long-poll limit for a fetch that "
                                   "leaves out a partition with records still to handle; kept short so it does not "
                                   "hold back that partition. A fetch of every partition of a broker waits up to "
                                   "500 ms: it returns at the first record.")
    session_timeout_ms: int = Field(default=10_000, ge=6_000, description="How soon the group gives a killed "
                                    "member's partitions away (the broker's minimum is 6000).")
    heartbeat_interval_ms: int = Field(default=3_000, ge=100, description="Heartbeats to the group coordinator.")
    max_poll_interval_ms: int = Field(default=10 * 60 * 1000, ge=1_000, description="A batch stuck longer "
                                      "(database down) makes this process leave the group; the batch is "
                                      "redelivered, never committed by us.")
    rebalance_timeout_ms: int = Field(default=30_000, ge=1_000, description="How long the group waits for members "
                                      "to rejoin during a rebalance.")
    revoke_wait_s: float = Field(default=15.0, gt=0, description="On a rebalance, how long the batch in flight may "
                                 "finish (and commit) before its partitions are given up.")
    max_partition_fetch_bytes: int = Field(default=1024 * 1024, ge=1024, description="Largest fetch per partition.")

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        """`group_id` defaulted to `<topic prefix>-<service>`: two installations on one cluster with different
        prefixes never share a group, and the default prefix keeps the historical ids (`assetbus-persister`)."""
        if not isinstance(data, dict) or data.get("group_id"):
            return data
        topics = data.get("topics")
        prefix = topics.prefix if isinstance(topics, Topics) else (topics or {}).get("prefix", Topics().prefix)
        return {**data, "group_id": f"{prefix}-{cls.service}"}

    @model_validator(mode="after")
    def _consistent_group(self) -> Any:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
        if self.revoke_wait_s * 1000 >= self.rebalance_timeout_ms:
            raise ValueError("revoke_wait_s must be below rebalance_timeout_ms")
        return self

    def consumer_settings(self, *topics: str) -> ConsumerSettings:
        """The shell's settings: every field above, by the same name."""
        return ConsumerSettings(topics=topics, **self.model_dump(include=set(ConsumerGroupSettings.model_fields)))


class VerificationKeys(ServiceSettings):
    """The keys a token-verifying service (persister, API) holds: public keys only, except in local mode. Neither
    set means the service refuses to start: it never invents a secret."""

    token_jwks: str | None = Field(default=None, description="JWKS with the public keys that verify EdDSA/RS256 "
                                   "tokens: a file path or an http(s) URL (given by the edge from "
                                   "ASSETBUS_TOKEN_JWKS). Rotation: list the new and the old key.")
    token_secret: str | None = Field(default=None, repr=False, description="HS256 key that verifies tokens: local "
                                     "development only (given by the edge in the local mode of `assetbus infra "
                                     "up`, or from ASSETBUS_TOKEN_SECRET).")

    @model_validator(mode="after")
    def _has_keys(self) -> VerificationKeys:
        if not self.token_jwks and not self.token_secret:
            raise ValueError("no token verification keys: set ASSETBUS_TOKEN_JWKS (a JWKS file or URL), or "
                             "ASSETBUS_TOKEN_SECRET for local development")
        return self


class KafkaSettings(KafkaConnection, BaseSettings):
    """The Kafka connection read from `KAFKA_*` variables and `.env` (the SDK reads the same fields
    from the task runner's environment with `KafkaConnection.from_environ()`)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=ENV_FILE, extra="ignore", frozen=True,
                                      enable_decoding=False)  # "a:1,b:2", split by KafkaConnection
