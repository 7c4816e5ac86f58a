"""ConsumerDag: the declarative definition of a DAG that runs when its upstream assets are ready
(docs/consumer-dags.md). Stored as JSON (`definition()`), read back with `ConsumerDag.from_definition`.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assetbus.consumers.scheduler.conditions import AssetWait, Condition
from assetbus.consumers.scheduler.mappings import PartitionMapping

DAG_ID_PATTERN = r"^[A-Za-z0-9._-]{1,200}$"
"""A DAG id is part of its readiness topic's name, so it uses topic-name characters."""


class ConsumerDag(BaseModel):
    """A consumer DAG: what it waits for, how partitions map, and whether queued events coalesce."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dag_id: str = Field(pattern=DAG_ID_PATTERN, description="Consumer DAG id (letters, digits, . _ -).")
    schedule: Condition = Field(description="Asset condition: an AssetWait, AllOf or AnyOf (nestable).")
    coalesce: bool = Field(default=True, description="Coalesce queued events of a target partition into one "
                           "run (the default); False makes one run per event.")
    description: str = Field(default="", max_length=2000, description="Free text shown by `assetbus dags list`.")
    outlets: tuple[str, ...] = Field(default=(), description="Assets this DAG's tasks and callbacks publish; "
                                     "`assetbus dags sync` refuses a DAG whose outlets feed its own schedule.")

    @model_validator(mode="after")
    def _each_asset_once(self) -> ConsumerDag:
        seen: set[str] = set()
        for wait in self.schedule.waits():
            if wait.asset in seen:
                raise ValueError(f"asset {wait.asset!r} appears twice in the schedule; wait for it once")
            seen.add(wait.asset)
        return self

    @cached_property
    def waits(self) -> dict[str, AssetWait]:
        return {wait.asset: wait for wait in self.schedule.waits()}

    @cached_property
    def ready_at_any_event(self) -> bool:
        """The schedule is one asset wait whose mapping makes a target ready at any one event: its condition
        holds for a target exactly when something is queued there (the planner's shortcut)."""
        return isinstance(self.schedule, AssetWait) and self.schedule.mapping.any_event

    @property
    def assets(self) -> list[str]:
        return sorted(self.waits)

    def mapping_for(self, asset: str) -> PartitionMapping:
        return self.waits[asset].mapping

    def definition(self) -> dict[str, Any]:
        """The JSON form stored in `consumer_dags.definition` (without `outlets` when there are none, so
        definitions synced before the field existed keep their fingerprint)."""
        return self.model_dump(mode="json", exclude={"outlets"} if not self.outlets else None)

    def feeds_itself(self, outlets: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """The assets the DAG both publishes (its `outlets`, plus registered `outlets`) and waits for."""
        return sorted((set(self.outlets) | set(outlets)) & set(self.waits))

    def fingerprint(self) -> str:
        """A hash of the definition: a re-sync of an unchanged DAG is a no-op."""
        canonical = json.dumps(self.definition(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @classmethod
    def from_definition(cls, data: dict[str, Any]) -> ConsumerDag:
        return cls.model_validate(data)

    @classmethod
    def readable(cls, data: dict[str, Any]) -> ConsumerDag | None:
        """The stored definition, or None where it cannot be read (written by another version, or edited by hand):
        what a view shows as unreadable instead of failing."""
        try:
            return cls.model_validate(data)
        except ValidationError:
            return None

    def describe(self) -> str:
        return self.schedule.describe()
