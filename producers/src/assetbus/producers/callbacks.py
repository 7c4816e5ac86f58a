"""Callbacks and notifiers: a thin layer over the asset handle (docs/emitting.md, "Emitting from a callback or
notifier"). The provenance is the running callback's token; the orchestrator's callback context only supplies
*references* that go into `extra`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from assetbus.producers.assets import Asset
from assetbus.producers.validation import check_asset
from assetbus.schemas import Receipt

MAX_TEXT = 500
"""Longest text copied from a callback context into `extra` (references, never whole logs)."""


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, Enum):
        value = value.value
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text[:MAX_TEXT]


def run_references(context: Mapping[str, Any] | None) -> dict[str, Any]:
    """References to the run from an orchestrator's callback context (Airflow-shaped, duck-typed).

    Keeps ids, states, dates, a reason, the exception's type and first line, and the log URL;
    leaves out everything else. Missing keys are simply absent.
    """
    if not context:
        return {}
    dag_run = context.get("dag_run")
    dag = context.get("dag")
    ti = context.get("task_instance") or context.get("ti")
    found: dict[str, Any] = {
        "dag_id": getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None) or context.get("dag_id"),
        "run_id": context.get("run_id") or getattr(dag_run, "run_id", None),
        "logical_date": _text(context.get("logical_date") or getattr(dag_run, "logical_date", None)),
        "run_state": _text(getattr(dag_run, "state", None)),
        "task_id": getattr(ti, "task_id", None),
        "map_index": getattr(ti, "map_index", None),
        "try_number": getattr(ti, "try_number", None),
        "task_state": _text(getattr(ti, "state", None)),
        "log_url": _text(getattr(ti, "log_url", None)),
        "reason": _text(context.get("reason")),
    }
    error = context.get("exception")
    if isinstance(error, BaseException):
        first_line = (str(error).splitlines() or [""])[0]
        found["exception"] = _text(f"{type(error).__name__}: {first_line}")
    elif error is not None:
        found["exception"] = _text(error)
    return {k: (v if isinstance(v, int | bool) or v is None else str(v)) for k, v in found.items() if v is not None}


class AssetNotifier:
    """A notifier that emits `asset` with references to the run: `on_failure_callback=AssetNotifier(alerts)`.
    Called with the callback context, it emits `extra = {**extra, "run": run_references(context)}` once and returns
    the receipt; `dedupe_key` makes a re-run callback (or a retried notifier) a duplicate, not a second event."""

    def __init__(self, asset: Asset | object, *, extra: Mapping[str, Any] | None = None,
                 dedupe_key: str | None = None, raise_on_reject: bool = True) -> None:
        self.asset = asset if isinstance(asset, Asset) else Asset(check_asset(asset).name, check_asset(asset).uri)
        self.extra = dict(extra or {})
        self.dedupe_key = dedupe_key
        self.raise_on_reject = raise_on_reject

    def extra_for(self, context: Mapping[str, Any] | None) -> dict[str, Any]:
        return {**self.extra, "run": run_references(context)}

    def __call__(self, context: Mapping[str, Any] | None = None) -> Receipt:
        return self.asset.emit(extra=self.extra_for(context), dedupe_key=self.dedupe_key,
                               raise_on_reject=self.raise_on_reject)

    async def async_call(self, context: Mapping[str, Any] | None = None) -> Receipt:
        """The same, for async callback runners."""
        return await self.asset.aemit(extra=self.extra_for(context), dedupe_key=self.dedupe_key,
                                      raise_on_reject=self.raise_on_reject)
