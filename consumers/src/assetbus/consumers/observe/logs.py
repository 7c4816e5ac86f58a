"""Structured logs: one line per event, as key=value pairs or as JSON, with the `extra=` fields.

`log.warning("dead letter", extra={"reason": "not_json", "source_offset": 17})` prints
`ts=2026-10-01T12:00:00.123Z level=WARNING logger=assetbus.persister msg="dead letter" reason=not_json
source_offset=17` (on one line).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": record.levelname,
        "logger": record.name,
        "msg": record.getMessage(),
    }
    for key, value in vars(record).items():
        if key not in _STANDARD and not key.startswith("_"):
            fields[key] = value
    if record.exc_info:
        fields["exc"] = logging.Formatter().formatException(record.exc_info)
    return fields


def _plain(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if text and not any(c in text for c in ' "=\n\t'):
        return text
    return json.dumps(text, ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    """`key=value key="value with spaces"`, greppable and machine-readable."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_plain(value)}" for key, value in _fields(record).items())


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record), default=str, ensure_ascii=False)


def configure(level: str = "INFO", fmt: str = "kv") -> None:
    """Route all logging to stderr in the chosen format (`kv` or `json`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
