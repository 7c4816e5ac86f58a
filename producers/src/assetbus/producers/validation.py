"""Client-side checks, before anything is sent: the same rules the persister enforces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from assetbus.producers.errors import InvalidEmission
from assetbus.schemas import EXTRA_MAX_BYTES, KEY_MAX_LENGTH, NAME_MAX_LENGTH, AssetRef
from assetbus.schemas.codecs import strict_json

__all__ = ["check_asset", "check_key", "check_partition", "encode_extra"]


def check_key(field: str, value: object) -> None:
    """A partition or dedupe key: a non-empty string within the length limit, without NUL."""
    if not (isinstance(value, str) and 0 < len(value) <= KEY_MAX_LENGTH):
        raise InvalidEmission(field, f"must be a non-empty string of at most {KEY_MAX_LENGTH} characters")
    if "\x00" in value:
        raise InvalidEmission(field, "may not contain NUL characters")


def check_asset(asset: object) -> AssetRef:
    """An AssetRef with a usable name and URI (handles, refs and {"name", "uri"} mappings alike)."""
    ref = asset if isinstance(asset, AssetRef) else getattr(asset, "ref", asset)
    if isinstance(ref, dict):
        try:
            ref = AssetRef.model_validate(ref)
        except ValueError as error:
            raise InvalidEmission("asset", f"must have a name and a URI: {error}") from error
    if not isinstance(ref, AssetRef):
        raise InvalidEmission("asset", f"must be an Asset handle or an AssetRef, not {type(asset).__name__}")
    for field, value in (("asset.name", ref.name), ("asset.uri", ref.uri)):
        if "\x00" in value or len(value) > NAME_MAX_LENGTH:
            raise InvalidEmission(field, f"must be at most {NAME_MAX_LENGTH} characters without NUL")
    return ref


def check_partition(partition_key: str | None, partition_date: datetime | None) -> None:
    if partition_key is not None:
        check_key("partition_key", partition_key)
    if partition_date is None:
        return
    if not isinstance(partition_date, datetime):
        raise InvalidEmission("partition_date", "must be a datetime")
    if partition_key is None:
        raise InvalidEmission("partition_date", "requires partition_key (partitions are never inherited)")
    if partition_date.utcoffset() is None:
        raise InvalidEmission("partition_date", "must be time-zone aware, e.g. datetime(2026, 10, 1, tzinfo=UTC)")


def _has_nul(data: object) -> bool:
    if isinstance(data, str):
        return "\x00" in data
    if isinstance(data, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in data.items())
    if isinstance(data, list | tuple):
        return any(_has_nul(item) for item in data)
    return False


def encode_extra(extra: Any) -> tuple[dict[str, Any], str]:
    """The checked `extra` and its compact JSON (the bytes the size limit is measured on)."""
    if extra is None:
        return {}, "{}"
    if not isinstance(extra, dict):
        raise InvalidEmission("extra", f"must be a JSON object (a dict), not {type(extra).__name__}")
    try:
        encoded = strict_json(extra)
    except (TypeError, ValueError) as error:
        raise InvalidEmission("extra", f"is not JSON-serializable: {error}") from error
    size = len(encoded) if len(encoded) * 4 <= EXTRA_MAX_BYTES else len(encoded.encode())  # UTF-8: <= 4 bytes/char
    if size > EXTRA_MAX_BYTES:
        raise InvalidEmission("extra", f"is {size} bytes; the limit is {EXTRA_MAX_BYTES} (send references, not data)")
    if "\\u0000" in encoded and _has_nul(extra):
        raise InvalidEmission("extra", "may not contain NUL characters")
    return extra, encoded
