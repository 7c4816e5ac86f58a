"""What a consumer DAG waits for: assets (each with a partition mapping), combined with all-of / any-of.

Evaluation is pure: given which upstream slots have arrived for one target partition, does the
condition hold? Nestable: `AllOf(AssetWait("orders"), AnyOf(AssetWait("eu"), AssetWait("us")))`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from assetbus.consumers.scheduler.mappings import NEVER, Identity, PartitionMapping
from assetbus.schemas import NAME_MAX_LENGTH

Arrived = Mapping[str, frozenset[str]]
"""For one target partition: asset name → the upstream slots that have arrived."""


@dataclass(frozen=True, slots=True)
class Progress:
    """How far one asset wait is for one target: `have` of `need` slots (need 1 when any event will do)."""

    asset: str
    have: int
    need: int
    unit: str

    @property
    def complete(self) -> bool:
        return self.have >= self.need

    def __str__(self) -> str:
        return f"{self.asset} {self.have}/{self.need} {self.unit}"


class AssetWait(BaseModel):
    """Wait for events of one registered asset, mapped to this DAG's partitions by `mapping`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["asset"] = Field(default="asset", description="Condition type.")
    asset: str = Field(min_length=1, max_length=NAME_MAX_LENGTH, description="Registered asset name.")
    mapping: PartitionMapping = Field(default_factory=Identity,
                                      description="How the asset's partitions map to the DAG's partitions.")

    def __init__(self, asset: str | None = None, /, **data: Any) -> None:
        if asset is not None:
            data["asset"] = asset
        super().__init__(**data)

    def holds(self, arrived: Arrived, target_key: str | None) -> bool:
        slots = arrived.get(self.asset, frozenset())
        window = self.mapping.window(target_key)
        return bool(slots) if window is None else window <= slots

    def waits(self) -> list[AssetWait]:
        return [self]

    def progress(self, arrived: Arrived, target_key: str | None) -> list[Progress]:
        slots = arrived.get(self.asset, frozenset())
        window = self.mapping.window(target_key)
        if window is None:
            return [Progress(self.asset, min(len(slots), 1), 1, "events")]
        need = 0 if window is NEVER else len(window)
        return [Progress(self.asset, len(window & slots), need, self.mapping.unit)]

    def describe(self) -> str:
        return f"{self.asset} [{self.mapping.describe()}]"


class _Combined(BaseModel):
    """`AllOf` and `AnyOf`: `verdict` (`all` or `any`) over the conditions' verdicts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    if TYPE_CHECKING:  # fields of each subclass (`conditions` after `kind`: the stored definitions' key order)
        kind: str
        conditions: list[Condition]
    verdict: ClassVar[Callable[[Iterable[bool]], bool]]

    def holds(self, arrived: Arrived, target_key: str | None) -> bool:
        return type(self).verdict(c.holds(arrived, target_key) for c in self.conditions)

    def waits(self) -> list[AssetWait]:
        return [wait for c in self.conditions for wait in c.waits()]

    def progress(self, arrived: Arrived, target_key: str | None) -> list[Progress]:
        return [p for c in self.conditions for p in c.progress(arrived, target_key)]

    def describe(self) -> str:
        return f"{self.kind.replace('_', ' ')} (" + ", ".join(c.describe() for c in self.conditions) + ")"


class AllOf(_Combined):
    """Holds when every condition holds for the target partition."""

    kind: Literal["all_of"] = Field(default="all_of", description="Condition type.")
    conditions: list[Condition] = Field(min_length=1, description="Conditions that must all hold.")
    verdict = all

    def __init__(self, *conditions: Condition, **data: Any) -> None:
        if conditions:
            data["conditions"] = list(conditions)
        super().__init__(**data)


class AnyOf(_Combined):
    """Holds when at least one condition holds for the target partition."""

    kind: Literal["any_of"] = Field(default="any_of", description="Condition type.")
    conditions: list[Condition] = Field(min_length=1, description="Conditions of which one must hold.")
    verdict = any

    def __init__(self, *conditions: Condition, **data: Any) -> None:
        if conditions:
            data["conditions"] = list(conditions)
        super().__init__(**data)


Condition = Annotated[AssetWait | AllOf | AnyOf, Field(discriminator="kind")]
"""Any condition, as stored in a DAG definition (tagged by `kind`)."""

AllOf.model_rebuild()
AnyOf.model_rebuild()
