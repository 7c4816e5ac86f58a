"""The persister's view of an EmissionCommand, and a fast way to read one from JSON.

Validating into the `EmissionCommand` model costs ~20-30 µs per record, mostly for building three
model instances and calling Provenance's Python validator. The fast path validates the same fields
with the same constraints into plain dicts (a TypedDict schema *generated from the models*, so the
contract stays defined once, in `schemas/`), then applies Provenance's one model-level rule here.
Anything the fast path does not accept goes to the model, and both paths yield the same `Command`
(a property test compares them).
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin

from pydantic import BaseModel, StringConstraints, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from assetbus.schemas import EmissionCommand, Provenance, SourceKind

SourceTuple = tuple[str, str, str, str | None, int | None, int | None]
"""(kind, dag_id, run_id, task_id, map_index, try_number): what a body claims, compared with the token."""


@dataclass(slots=True)
class Command:
    """A command that passed the contract; provenance still to be matched against its token."""

    command_id_text: str
    """The command id in canonical form (lowercase, dashed), as receipts and the database carry it."""
    producer_id: str
    reply_to: str
    asset_name: str
    asset_uri: str
    source: SourceTuple
    token: str
    extra: dict[str, Any]
    partition_key: str | None
    partition_date: datetime | None
    dedupe_key: str | None
    schema_version: int
    """-1 when the body does not say (such a command is rejected)."""

    @property
    def command_id(self) -> uuid.UUID:
        return uuid.UUID(self.command_id_text)

    @classmethod
    def of(cls, model: EmissionCommand) -> Command:
        """From the validated model (the slow path)."""
        return cls(str(model.command_id), model.producer_id, model.reply_to, model.asset.name,
                   model.asset.uri, source_tuple(model.source), model.token, model.extra,
                   model.partition_key, model.partition_date, model.dedupe_key, model.schema_version)


def source_tuple(source: Provenance) -> SourceTuple:
    return (source.kind.value, source.dag_id, source.run_id, source.task_id, source.map_index, source.try_number)


def _typed_dict(model: type[BaseModel], overrides: dict[str, Any] | None = None) -> Any:
    """A TypedDict with the model's fields, types and constraints (nested models become TypedDicts,
    enums the literals of their values); `overrides` narrows some fields further."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = (overrides or {}).get(name) or _plain(info.annotation)
        if info.metadata:
            annotation = Annotated[annotation, *info.metadata]
        fields[name] = Required[annotation] if info.is_required() else NotRequired[annotation]
    return TypedDict(f"{model.__name__}Dict", fields)  # type: ignore[operator]


def _plain(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _typed_dict(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Literal[tuple(member.value for member in annotation)]
    if get_origin(annotation) is Union or type(annotation).__name__ == "UnionType":
        return Union[tuple(_plain(a) for a in get_args(annotation))]  # noqa: UP007
    return annotation


CANONICAL_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""The form `str(uuid)` writes and emitters send: the fast path keeps the text (other spellings of
a UUID take the slow path, which normalizes them)."""

_FAST = TypeAdapter(_typed_dict(EmissionCommand, {"command_id": Annotated[str, StringConstraints(
    pattern=CANONICAL_UUID)]}))
_TASK = SourceKind.TASK.value


def parse_fast(value: bytes) -> Command | None:
    """The command, if the bytes are a valid command by the strictest reading; None means: ask the model."""
    try:
        data = _FAST.validate_json(value, strict=True)
    except ValidationError:
        return None
    src = data["source"]
    source = (src["kind"], src["dag_id"], src["run_id"], src.get("task_id"), src.get("map_index"),
              src.get("try_number"))
    # Provenance's model validator: task sources carry all task fields, DAG sources none.
    task_fields = source[3:]
    if (None in task_fields) if source[0] == _TASK else (task_fields != (None, None, None)):
        return None
    asset = data["asset"]
    return Command(data["command_id"], data["producer_id"], data["reply_to"], asset["name"], asset["uri"],
                   source, data["token"], data.get("extra", {}), data.get("partition_key"), data.get("partition_date"),
                   data.get("dedupe_key"), data.get("schema_version", -1))
