"""Topic names. All of them take one configurable prefix (default `assetbus`)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_PREFIX = "assetbus"
_DAG_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


class Topics(BaseModel):
    """The names of every topic for one prefix."""

    model_config = ConfigDict(frozen=True)

    prefix: str = Field(default=DEFAULT_PREFIX, pattern=r"^[A-Za-z0-9._-]{1,100}$",
                        description="Prefix shared by all topic names.")

    @property
    def emissions(self) -> str:
        """EmissionCommands, keyed by asset name: producers → persister."""
        return f"{self.prefix}.emissions"

    @property
    def receipts(self) -> str:
        """Receipts, keyed by producer id: persister → producers (the default reply topic)."""
        return f"{self.prefix}.receipts"

    @property
    def asset_events(self) -> str:
        """Persisted AssetEvents, keyed by asset name: persister → scheduler and anyone."""
        return f"{self.prefix}.asset-events"

    @property
    def emissions_dlq(self) -> str:
        """Bytes that are not a command, with the reason in headers."""
        return f"{self.prefix}.emissions.dlq"

    def readiness(self, dag_id: str) -> str:
        """ReadinessSignals for one consumer DAG, keyed by target partition key."""
        if not _DAG_ID.match(dag_id):
            raise ValueError(f"dag_id {dag_id!r} cannot be part of a topic name")
        return f"{self.prefix}.readiness.{dag_id}"

    def core(self) -> dict[str, int]:
        """The fixed topics with their default partition counts."""
        return {self.emissions: 6, self.receipts: 6, self.asset_events: 6, self.emissions_dlq: 1}
