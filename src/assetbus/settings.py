"""Configuration read once, at the edge, from the environment and `.env` (pydantic-settings): what the
commands share (where Kafka and PostgreSQL are, the token keys, the local infrastructure). The services'
own models (`PersisterConfig`, ...) read their tuning the same way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.consumers.settings import ENV_FILE, KafkaSettings
from assetbus.consumers.storage.urls import engine_url
from assetbus.producers.kafka import KafkaConnection
from assetbus.security_settings import SecuritySettings

if TYPE_CHECKING:
    from assetbus.producers.tokens import TokenKey

__all__ = ["ApiSettings", "ConnectionSettings", "InfraSettings", "SecuritySettings", "Settings", "TopicSettings",
           "normalize_db_url"]

NODE_PORT_STEP = 10
"""Node n (0-based) of a local multi-node cluster listens on each base port + n * NODE_PORT_STEP."""


class InfraSettings(BaseSettings):
    """Where the local infrastructure lives and how it is started."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_", env_file=ENV_FILE, extra="ignore")

    home: Path = Field(
        default=Path.home() / ".cache" / "assetbus",
        description="Folder for the Kafka jars, broker data, logs and the launcher's state file.",
    )
    kafka_version: str = Field(default="4.4.0", description="Apache Kafka version fetched from Maven Central.")
    kafka_port: int = Field(default=19092, description="Local broker's client port (127.0.0.1).")
    kafka_controller_port: int = Field(default=19093, description="Local broker's KRaft controller port (127.0.0.1).")
    kafka_heap: str = Field(default="768m", description="Local broker's JVM heap (-Xmx); keep at least 512m.")
    kafka_jvm_options: str = Field(
        default="", description="More JVM options for the local broker(s), space-separated (e.g. -XX:+UseSerialGC)."
    )
    kafka_brokers: int = Field(
        default=1, ge=1, le=9,
        description="Local Kafka nodes: 1 (one broker) or a cluster of combined KRaft broker+controllers.",
    )
    kafka_secure: bool = Field(
        default=False, description="Give a local cluster a SASL_SSL listener (SCRAM-SHA-512, self-signed CA)."
    )
    kafka_secure_port: int = Field(default=19094,
                                   description="SASL_SSL port of a local cluster's first node (127.0.0.1).")

    def local_bootstrap(self) -> str:
        """The bootstrap list of the local broker or cluster (plaintext listeners)."""
        ports = (self.kafka_port + n * NODE_PORT_STEP for n in range(self.kafka_brokers))
        return ",".join(f"127.0.0.1:{port}" for port in ports)
    pg_port: int = Field(default=5432, description="Port of the local PostgreSQL cluster.")
    pg_user: str = Field(default="assetbus", description="Role created in the local cluster.")
    pg_password: str = Field(default="assetbus", description="Password of that role (local use only).")
    pg_database: str = Field(default="assetbus", description="Database created in the local cluster.")


class ConnectionSettings(BaseSettings):
    """Where Kafka and PostgreSQL are. Unset means: the local infrastructure from `assetbus infra up`."""

    model_config = SettingsConfigDict(env_file=ENV_FILE, extra="ignore")

    kafka_bootstrap_servers: str | None = Field(
        default=None, description="KAFKA_BOOTSTRAP_SERVERS; set it to use your own broker (nothing is started)."
    )
    database_url: str | None = Field(
        default=None, description="DATABASE_URL; set it to use your own PostgreSQL (nothing is started)."
    )
    topic_prefix: str = Field(
        default="assetbus", alias="ASSETBUS_TOPIC_PREFIX", description="Prefix of every topic name."
    )
    create_topics: bool = Field(
        default=True, alias="ASSETBUS_CREATE_TOPICS", description="ASSETBUS_CREATE_TOPICS=false: never create "
        "topics (migrate, dags sync and the scheduler check them and name the missing ones)."
    )

    @field_validator("kafka_bootstrap_servers", "database_url")
    @classmethod
    def _not_empty(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Set but empty is a mistake (an unfilled template, `VAR=` in a unit file), never "the local one":
        unset the variable for that."""
        if value is not None and not value.strip():
            variable = str(info.field_name).upper()
            raise ValueError(f"{variable} is set but empty; give a value, or unset {variable} to use the local "
                             "infrastructure of `assetbus infra up`")
        return value

    def bootstrap(self, infra: InfraSettings) -> str:
        return self.kafka_bootstrap_servers or infra.local_bootstrap()

    def db_url(self, infra: InfraSettings) -> str:
        if self.database_url:
            return normalize_db_url(self.database_url)
        return (
            f"postgresql+asyncpg://{infra.pg_user}:{infra.pg_password}"
            f"@127.0.0.1:{infra.pg_port}/{infra.pg_database}"
        )


def normalize_db_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use the asyncpg driver for them: `storage.urls.engine_url`
    (`sslmode=` becomes asyncpg's `ssl=`, a libpq host list the dialect's repeated `host=`)."""
    return engine_url(url)


class TopicSettings(BaseSettings):
    """How `assetbus migrate` creates topics (existing ones are checked against it, never changed)."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_TOPIC_", extra="ignore")

    partitions: int | None = Field(default=None, ge=1, description="ASSETBUS_TOPIC_PARTITIONS: partitions of the "
                                   "emissions, receipts and asset-events topics (default 6).")
    replication_factor: int | None = Field(default=None, ge=1, description="ASSETBUS_TOPIC_REPLICATION_FACTOR "
                                           "(default: the smaller of 3 and the number of brokers).")
    min_insync_replicas: int | None = Field(default=None, ge=1, description="ASSETBUS_TOPIC_MIN_INSYNC_REPLICAS "
                                            "(default: one less than the replication factor, between 1 and 2).")


class ApiSettings(BaseSettings):
    """Where clients (the SDK's state client, examples) find the execution API. Where it listens is
    `ApiConfig` (`ASSETBUS_API_HOST`, `ASSETBUS_API_PORT`)."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_API_", env_file=ENV_FILE, extra="ignore")

    url: str = Field(default="http://127.0.0.1:8321",
                     description="ASSETBUS_API_URL: base URL clients (SDK, examples) use to reach the API.")


class Settings:
    """Everything read from the environment, once."""

    def __init__(self) -> None:
        self.infra = InfraSettings()
        self.conn = ConnectionSettings()
        self.security = SecuritySettings()
        self._kafka = KafkaSettings()
        self.topic_settings = TopicSettings()

    @property
    def kafka(self) -> KafkaConnection:
        """The Kafka connection: KAFKA_* settings, on the local broker unless KAFKA_BOOTSTRAP_SERVERS names one."""
        servers = self.conn.bootstrap(self.infra)
        return KafkaConnection.model_validate({**self._kafka.model_dump(), "bootstrap_servers": servers})

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap

    @property
    def database_url(self) -> str:
        return self.conn.db_url(self.infra)

    @property
    def token_secret(self) -> str:
        """An HS256 secret for local tools (benchmarks, demo): configured, or the local mode's."""
        return self.security.secret(self.infra.home)

    @property
    def signing_key(self) -> TokenKey:
        """The key that mints tokens here: a signing key file, or in local mode the HS256 secret."""
        return self.security.signing_key(self.infra.home)

    @property
    def verification_keys(self) -> dict[str, str | None]:
        """`token_jwks` and `token_secret` for a service config (raises SecurityConfigError if none)."""
        return self.security.verification(self.infra.home)

    @property
    def topic_prefix(self) -> str:
        return self.conn.topic_prefix

    @property
    def create_topics(self) -> bool:
        return self.conn.create_topics


class AirflowSettings(BaseSettings):
    """Airflow's API server and the service account assetbus uses there (bridge, token checks, sync)."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_AIRFLOW_", env_file=ENV_FILE, extra="ignore")

    url: str | None = Field(default=None, description="ASSETBUS_AIRFLOW_URL: Airflow's API server, "
                            "e.g. http://airflow:8080; unset turns the Airflow integration off.")
    username: str = Field(default="assetbus", description="ASSETBUS_AIRFLOW_USERNAME: the service account.")
    password: SecretStr | None = Field(default=None, description="ASSETBUS_AIRFLOW_PASSWORD: its password "
                                       "(exchanged for a JWT at Airflow's POST /auth/token).")
    token: SecretStr | None = Field(default=None, description="ASSETBUS_AIRFLOW_TOKEN: a static bearer token "
                                    "for Airflow's REST API, as a platform hands them out (instead of a password).")
    auth: str | None = Field(default=None, description="ASSETBUS_AIRFLOW_AUTH: package.module:Factory, an "
                             "httpx.Auth subclass (or a function returning one) for a platform's own token flow "
                             "(instead of a password or a token).")
    timeout_s: float = Field(default=10.0, description="ASSETBUS_AIRFLOW_TIMEOUT_S: per-request timeout.")
