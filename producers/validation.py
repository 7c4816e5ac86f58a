"""Client-side checks, before anything is sent: the same rules the persister enforces."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from producers.errors import EmitterError
from schemas import EXTRA_MAX_BYTES, KEY_MAX_LENGTH


class InvalidEmission(EmitterError):
    """The emission breaks a rule and was not sent. `field` names the argument at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def check_partition(partition_key: str | None, partition_date: datetime | None) -> None:
    if partition_key is not None and not (isinstance(partition_key, str) and 0 < len(partition_key) <= KEY_MAX_LENGTH):
        raise InvalidEmission("partition_key", f"must be a non-empty string of at most {KEY_MAX_LENGTH} characters")
    if partition_date is None:
        return
    if not isinstance(partition_date, datetime):
        raise InvalidEmission("partition_date", "must be a datetime")
    if partition_key is None:
        raise InvalidEmission("partition_date", "requires partition_key (partitions are never inherited)")
    if partition_date.utcoffset() is None:
        raise InvalidEmission("partition_date", "must be time-zone aware, e.g. datetime(2026, 10, 1, tzinfo=UTC)")


def check_extra(extra: Any) -> dict[str, Any]:
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise InvalidEmission("extra", f"must be a JSON object (a dict), not {type(extra).__name__}")
    try:
        encoded = json.dumps(extra, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as error:
        raise InvalidEmission("extra", f"is not JSON-serializable: {error}") from error
    if len(encoded) > EXTRA_MAX_BYTES:
        raise InvalidEmission("extra", f"is {len(encoded)} bytes; the limit is {EXTRA_MAX_BYTES} "
                              "(send references, not data)")
    if "\\u0000" in encoded.decode():
        raise InvalidEmission("extra", "may not contain NUL characters")
    return extra


def check_dedupe_key(dedupe_key: str | None) -> None:
    if dedupe_key is not None and not (isinstance(dedupe_key, str) and 0 < len(dedupe_key) <= KEY_MAX_LENGTH):
        raise InvalidEmission("dedupe_key", f"must be a non-empty string of at most {KEY_MAX_LENGTH} characters")
