"""Configuration read once, at the edge, from the environment and `.env` (pydantic-settings).

Every CLI command builds one `Settings` and passes plain values down. The services' own models
(`PersisterConfig`, `SchedulerConfig`, `ApiConfig`) read their tuning the same way; this module holds
what is shared: where Kafka and PostgreSQL are, the token key, the local infrastructure.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.consumers.settings import ENV_FILE, KafkaSettings
from assetbus.producers.kafka import KafkaConnection

DEFAULT_KAFKA_PORT = 19092
DEFAULT_KAFKA_CONTROLLER_PORT = 19093
DEFAULT_PG_PORT = 5432


class InfraSettings(BaseSettings):
    """Where the local infrastructure lives and how it is started."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_", env_file=ENV_FILE, extra="ignore")

    home: Path = Field(
        default=Path.home() / ".cache" / "assetbus",
        description="Folder for the Kafka jars, broker data, logs and the launcher's state file.",
    )
    kafka_version: str = Field(default="4.4.0", description="Apache Kafka version fetched from Maven Central.")
    kafka_port: int = Field(default=DEFAULT_KAFKA_PORT, description="Local broker's client port (127.0.0.1).")
    kafka_controller_port: int = Field(
        default=DEFAULT_KAFKA_CONTROLLER_PORT, description="Local broker's KRaft controller port (127.0.0.1)."
    )
    kafka_heap: str = Field(default="768m", description="Local broker's JVM heap (-Xmx); keep at least 512m.")
    pg_port: int = Field(default=DEFAULT_PG_PORT, description="Port of the local PostgreSQL cluster.")
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

    def bootstrap(self, infra: InfraSettings) -> str:
        return self.kafka_bootstrap_servers or f"127.0.0.1:{infra.kafka_port}"

    def db_url(self, infra: InfraSettings) -> str:
        if self.database_url:
            return normalize_db_url(self.database_url)
        return (
            f"postgresql+asyncpg://{infra.pg_user}:{infra.pg_password}"
            f"@127.0.0.1:{infra.pg_port}/{infra.pg_database}"
        )


def normalize_db_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use the asyncpg driver for them."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+asyncpg://" + url[len(plain) :]
    return url


class SecuritySettings(BaseSettings):
    """Token signing key. Configuration only: never in the repo."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_", env_file=ENV_FILE, extra="ignore")

    token_secret: str | None = Field(default=None, description="ASSETBUS_TOKEN_SECRET: HMAC key of emitter tokens.")

    def secret(self, infra: InfraSettings) -> str:
        """The configured secret, or a local one generated once into the launcher's home folder."""
        if self.token_secret:
            return self.token_secret
        path = infra.home / "token-secret"
        if not path.exists():
            import secrets

            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        return path.read_text().strip()


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

    @property
    def kafka(self) -> KafkaConnection:
        """The Kafka connection: KAFKA_* settings, on the local broker unless KAFKA_BOOTSTRAP_SERVERS names one."""
        servers = self.conn.kafka_bootstrap_servers or f"127.0.0.1:{self.infra.kafka_port}"
        return KafkaConnection.model_validate({**self._kafka.model_dump(), "bootstrap_servers": servers})

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap

    @property
    def database_url(self) -> str:
        return self.conn.db_url(self.infra)

    @property
    def token_secret(self) -> str:
        return self.security.secret(self.infra)

    @property
    def topic_prefix(self) -> str:
        return self.conn.topic_prefix


class AirflowSettings(BaseSettings):
    """Airflow's API server and the service account assetbus uses there (bridge, token checks, sync)."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_AIRFLOW_", env_file=ENV_FILE, extra="ignore")

    url: str | None = Field(default=None, description="ASSETBUS_AIRFLOW_URL: Airflow's API server, "
                            "e.g. http://airflow:8080; unset turns the Airflow integration off.")
    username: str = Field(default="assetbus", description="ASSETBUS_AIRFLOW_USERNAME: the service account.")
    password: SecretStr | None = Field(default=None, description="ASSETBUS_AIRFLOW_PASSWORD: its password "
                                       "(exchanged for a JWT at Airflow's POST /auth/token).")
    timeout_s: float = Field(default=10.0, description="ASSETBUS_AIRFLOW_TIMEOUT_S: per-request timeout.")
