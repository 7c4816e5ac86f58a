"""Structured logs: one line per event, as key=value pairs or as JSON, with the `extra=` fields; a library's
repeated warnings and errors limited (docs/operations.md, "Dead letters, logs and metrics").
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

REPEAT_EVERY_S = 10.0
_REMEMBERED = 1024

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


class RepeatLimiter(logging.Filter):
    """Passes a warning or error, then none like it (same logger, level and message template) for
    `REPEAT_EVERY_S`; the next one carries `suppressed=N`. Lines below WARNING, and those of the `assetbus`
    loggers, always pass. Thread-safe (the probes' server logs from its own thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, int, str], tuple[float, int]] = {}
        self.suppressed: Counter[tuple[str, str]] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.name.split(".", 1)[0] == "assetbus":
            return True
        key, now = (record.name, record.levelno, str(record.msg)), self._clock()
        with self._lock:
            said_at, skipped = self._last.get(key, (None, 0))
            if said_at is not None and now - said_at < REPEAT_EVERY_S:
                self._last[key] = (said_at, skipped + 1)
                self.suppressed[(record.name, record.levelname)] += 1
                return False
            if len(self._last) >= _REMEMBERED:  # messages formatted before logging: forget the quiet ones
                self._last = {k: v for k, v in self._last.items() if now - v[0] < REPEAT_EVERY_S}
            self._last[key] = (now, 0)
        if skipped:
            record.suppressed = skipped
        return True


REPEATS = RepeatLimiter()
"""The process's limiter: `configure` puts it on the log handler, and `process_metrics` exports its counts."""


def configure(level: str = "INFO", fmt: str = "kv") -> None:
    """Route all logging to stderr in the chosen format (`kv` or `json`), repeated warnings and errors limited
    by `REPEATS`."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    handler.addFilter(REPEATS)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiokafka").setLevel(logging.WARNING)


_LOOP_LOG = logging.getLogger("assetbus.loop")


def handle_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A failed TLS connection (an `ssl.SSLError`, however the loop reports it, or uvloop's write to its closed
    TCP transport) is one debug line; anything else goes to asyncio's default handler.

    The code that opened the connection already reported it (aiokafka's log, the start-up wait's one line).
    uvloop reports it again: `Future exception was never retrieved` when the cyclic collector frees the
    handshake's unawaited future (an untrusted CA), or "Fatal error on SSL protocol" with `RuntimeError: ...
    the handler is closed` when it writes to a transport already torn down (a refused SASL login;
    MagicStack/uvloop issues #68, #471)."""
    error = context.get("exception")
    message = str(context.get("message", ""))
    closed_transport_write = (isinstance(error, RuntimeError) and "the handler is closed" in str(error)
                              and "SSL" in message)
    if isinstance(error, ssl.SSLError) or closed_transport_write:
        _LOOP_LOG.debug("a failed TLS connection reported again by the event loop (%s): %s: %s",
                        message, type(error).__name__, error)
        return
    loop.default_exception_handler(context)


def install_loop_handler(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    loop.set_exception_handler(handle_loop_error)
    return loop
