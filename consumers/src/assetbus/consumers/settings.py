"""The services' settings: one pydantic-settings model per service, each default written once.

Every field of a service model can be set in three ways, strongest first: a keyword argument (what
`assetbus run <service> --option` passes), an environment variable `ASSETBUS_<SERVICE>_<FIELD>`,
and the same line in a `.env` file in the working directory. The models validate their values
(positive batch sizes, ordered back-off bounds…), so nothing downstream clamps or re-checks them.
Connection values (Kafka, database, token key, topic prefix) are shared by all services and given
by the edge that builds the model (`assetbus.settings.Settings`).
"""

from __future__ import annotations

from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.producers.kafka import ENV_PREFIX, KafkaConnection

__all__ = ["ENV_FILE", "KafkaSettings", "ServiceSettings", "service_settings_config"]

ENV_FILE = ".env"


def service_settings_config(env_prefix: str) -> SettingsConfigDict:
    """The model config every service model uses, with its own environment prefix."""
    return SettingsConfigDict(env_prefix=env_prefix, env_file=ENV_FILE, extra="ignore", frozen=True,
                              validate_default=True, populate_by_name=True)


class ServiceSettings(BaseSettings):
    """Base of the service models: `env_prefix` names the service, e.g. `ASSETBUS_PERSISTER_`."""

    model_config = service_settings_config("ASSETBUS_")

    def replace(self, **changes: Any) -> Any:
        """A validated copy with `changes` applied (the models are frozen)."""
        return type(self).model_validate({**self.model_dump(), **changes})

    @classmethod
    def env_name(cls, field: str) -> str:
        """The environment variable of one field."""
        prefix = cls.model_config.get("env_prefix") or ""
        return f"{prefix}{field}".upper()


class KafkaSettings(KafkaConnection, BaseSettings):
    """The Kafka connection read from `KAFKA_*` variables and `.env` (the SDK reads the same fields
    from the task runner's environment with `KafkaConnection.from_environ()`)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=ENV_FILE, extra="ignore", frozen=True,
                                      enable_decoding=False)  # "a:1,b:2", split by KafkaConnection

    @property
    def configured(self) -> bool:
        """Whether the brokers were named (otherwise: the local broker of `assetbus infra up`)."""
        return "bootstrap_servers" in self.model_fields_set

    def connection(self) -> KafkaConnection:
        """The plain connection model, to pass to the clients."""
        return KafkaConnection.model_validate(self.model_dump())
