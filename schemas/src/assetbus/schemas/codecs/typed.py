"""What the codecs generate from the contract's models: each message's reference codec (`model_codec`), and
plain-dict validators for the fast decoders.

Validating into a pydantic model costs mostly model construction (nested models, Python-level
model validators). A TypedDict with the model's fields, types and constraints validates the same
bytes into plain dicts several times faster, and stays defined once: it is *generated from the
model*. Model-level validators are not carried over; a fast decoder applies them itself, and
`tests/unit/schemas/codecs` fails when a model gains one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, StringConstraints, TypeAdapter
from typing_extensions import NotRequired, Required, TypedDict

CANONICAL_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""The form `str(uuid)` writes and every sender of ours writes: a fast decoder keeps the text and
leaves other spellings of a UUID to the model, which normalizes them."""

M = TypeVar("M", bound=BaseModel)


def model_codec(model: type[M]) -> tuple[Callable[[M], bytes], Callable[[bytes | None], M]]:
    """The reference encoding of a message (the model's JSON) and its decoder, which raises pydantic's
    ValidationError for anything else."""

    def encode(message: M) -> bytes:
        return message.model_dump_json().encode()

    def decode(value: bytes | None) -> M:
        return model.model_validate_json(value or b"")

    return encode, decode


def typed_dict(model: type[BaseModel], overrides: dict[str, Any] | None = None) -> Any:
    """A TypedDict with the model's fields, types and constraints (nested models become TypedDicts,
    enums the literals of their values); `overrides` narrows some fields further."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = (overrides or {}).get(name) or _plain(info.annotation)
        if info.metadata:
            arguments = (annotation, *info.metadata)
            annotation = Annotated[arguments]  # one tuple: Annotated[type, *metadata] needs Python 3.11
        fields[name] = Required[annotation] if info.is_required() else NotRequired[annotation]
    return TypedDict(f"{model.__name__}Dict", fields)  # type: ignore[operator]


def plain_adapter(model: type[BaseModel], uuid_text: tuple[str, ...] = ()) -> TypeAdapter[Any]:
    """The validator of `typed_dict(model)`, with the `uuid_text` fields kept as canonical UUID text.
    About 10 ms to build: readers build theirs on first use, so processes that only encode never do."""
    text = Annotated[str, StringConstraints(pattern=CANONICAL_UUID)]
    return TypeAdapter(typed_dict(model, dict.fromkeys(uuid_text, text)))


def _plain(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return typed_dict(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Literal[tuple(member.value for member in annotation)]
    if get_origin(annotation) is Union or type(annotation).__name__ == "UnionType":
        return Union[tuple(_plain(a) for a in get_args(annotation))]  # noqa: UP007
    return annotation
