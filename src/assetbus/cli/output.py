"""`--json` output: one JSON document on stdout, with dates in ISO 8601 and rows as objects; else a table."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import typer

from assetbus.cli.common import console

if TYPE_CHECKING:
    from rich.table import Column

R = TypeVar("R")


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID | Path):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):
        return value._asdict()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def to_json(data: Any, *, compact: bool = False) -> str:
    """Indented, or on one line with `compact` (JSON Lines)."""
    if compact:
        return json.dumps(data, default=_default, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(data, default=_default, indent=2, ensure_ascii=False)


def print_json(data: Any) -> None:
    """Write `data` (rows, dataclasses, dicts) as one JSON document."""
    typer.echo(to_json(data))


def print_rows(rows: Sequence[R], as_json: bool, columns: Sequence[str | Column],
               cells: Callable[[R], Sequence[str]], **table: Any) -> None:
    """`rows` as one JSON document (--json), else as a table (`rich.table.Table(**table)`, its title on the left)
    of `columns` with the `cells` of each row."""
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    shown = Table(*columns, title_justify="left", **table)
    for row in rows:
        shown.add_row(*cells(row))
    console.print(shown)


def json_line(data: Any) -> str:
    """One compact JSON line in which a float that is not finite (a percentile of nothing) is null."""
    def finite(value: Any) -> Any:
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [finite(v) for v in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return finite(_default(value))
        return value

    return to_json(finite(data), compact=True)
