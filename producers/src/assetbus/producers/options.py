"""An emission's options, written once: every emit surface takes them as keyword arguments.

`Asset.emit`, `AsyncEmitter.emit`, `prepare` and the test double all spell their keywords as
`**options: Unpack[SendOptions]` (or `EmitOptions`), so a field added here reaches every surface,
and mypy refuses a call with a keyword that is not here. `tests/unit/producers/test_options.py`
checks that these fields, the EmissionCommand model, its codec, the HTTP emit body and the stored
event's columns agree field by field.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from typing_extensions import TypedDict

__all__ = ["EMIT_FIELDS", "SEND_FIELDS", "EmitOptions", "SendOptions", "check_options"]


class EmitOptions(TypedDict, total=False):
    """What an emission says, beside its asset (every key optional)."""

    extra: dict[str, Any] | None
    """A JSON object of references for consumers (at most 64 KiB): never secrets or whole logs."""
    partition_key: str | None
    """The partition that is ready; omitted, the event is unpartitioned (nothing is inherited)."""
    partition_date: datetime | None
    """The partition's timezone-aware date; needs `partition_key`."""
    dedupe_key: str | None
    """Repeats with this key (scoped to asset, DAG, run, task and map index) are one event."""


class SendOptions(EmitOptions, total=False):
    """The options of a call that waits for a receipt: the emission's, and how long one attempt waits."""

    timeout_s: float | None
    """Seconds to wait for the receipt before resending the same command (default: the runtime's)."""


EMIT_FIELDS: frozenset[str] = frozenset(EmitOptions.__annotations__)
"""The names of the emission's own fields (what is sent, stored and signalled)."""
SEND_FIELDS: frozenset[str] = frozenset(SendOptions.__annotations__)


def check_options(options: Mapping[str, object]) -> None:
    """Refuse a keyword that is no option (a TypeError, as a fixed signature would raise at run time)."""
    unknown = options.keys() - SEND_FIELDS
    if unknown:
        raise TypeError(f"emit() got unexpected keyword argument(s) {', '.join(sorted(unknown))}; "
                        f"the options are {', '.join(sorted(SEND_FIELDS))}")
