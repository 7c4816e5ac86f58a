"""`asset.emit(...)` on Airflow's own `airflow.sdk.Asset`, with the proposal's signature (Airflow PR #74726).

`install()` (run when `assetbus.producers.airflow` is imported) gives Airflow's Asset class an
`emit()` and an `aemit()` method, unless Airflow already has its own. Both emit under the running
attempt's token and wait for the receipt: `receipt.id` is the stored event's id,
`receipt.timestamp` when it was stored, `receipt.status` accepted or duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from assetbus.producers.airflow.attempt import Attempt, asset_ref, attempt_from_context, running_attempt
from assetbus.producers.airflow.credentials import token_source
from assetbus.producers.assets import Asset as Handle
from assetbus.producers.context import EmissionContext, task_context
from assetbus.producers.errors import InvalidEmission
from assetbus.schemas import Receipt

log = logging.getLogger("assetbus.airflow")

_MARK = "__assetbus__"


def _handle(asset: object) -> Handle:
    ref = asset_ref(asset)
    if ref is None:
        raise InvalidEmission("asset", f"{type(asset).__name__} has no name and URI (only Assets can be emitted)")
    return Handle(ref.name, ref.uri)


@contextmanager
def attempt_context(attempt: Attempt) -> Iterator[EmissionContext]:
    """Emit as `attempt`: its token (asked of the API), Kafka and topics, and its declared outlets."""
    credentials = token_source().credentials(attempt)
    with task_context(credentials.token, bootstrap_servers=credentials.bootstrap_servers,
                      topic_prefix=credentials.topic_prefix, outlets=attempt.outlets) as context:
        yield context


def emit(asset: object, *, extra: dict[str, Any] | None = None, partition_key: str | None = None,
         partition_date: datetime | None = None, dedupe_key: str | None = None,
         context: Mapping[str, Any] | None = None, raise_on_reject: bool = True) -> Receipt:
    """Emit `asset` (an Airflow Asset) as the running attempt, or as the one of a callback's `context`."""
    handle = _handle(asset)
    attempt = attempt_from_context(context) if context is not None else running_attempt()
    with attempt_context(attempt):
        return handle.emit(extra=extra, partition_key=partition_key, partition_date=partition_date,
                           dedupe_key=dedupe_key, raise_on_reject=raise_on_reject)


async def aemit(asset: object, *, extra: dict[str, Any] | None = None, partition_key: str | None = None,
                partition_date: datetime | None = None, dedupe_key: str | None = None,
                context: Mapping[str, Any] | None = None, raise_on_reject: bool = True) -> Receipt:
    """`emit()` for async task code."""
    handle = _handle(asset)
    attempt = attempt_from_context(context) if context is not None else running_attempt()
    with attempt_context(attempt):
        return await handle.aemit(extra=extra, partition_key=partition_key, partition_date=partition_date,
                                  dedupe_key=dedupe_key, raise_on_reject=raise_on_reject)


def _asset_emit(self: object, *, extra: dict[str, Any] | None = None, partition_key: str | None = None,
                partition_date: datetime | None = None, dedupe_key: str | None = None) -> Receipt:
    """Emit "this asset (partition) is ready now" from the running task, and wait for the receipt (assetbus)."""
    return emit(self, extra=extra, partition_key=partition_key, partition_date=partition_date, dedupe_key=dedupe_key)


async def _asset_aemit(self: object, *, extra: dict[str, Any] | None = None, partition_key: str | None = None,
                       partition_date: datetime | None = None, dedupe_key: str | None = None) -> Receipt:
    """`emit()` for async task code (assetbus)."""
    return await aemit(self, extra=extra, partition_key=partition_key, partition_date=partition_date,
                       dedupe_key=dedupe_key)


setattr(_asset_emit, _MARK, True)
setattr(_asset_aemit, _MARK, True)


def install() -> bool:
    """Give `airflow.sdk.Asset` the `emit()` / `aemit()` methods. False if Airflow has an emit() of its own."""
    from airflow.sdk import Asset

    current = getattr(Asset, "emit", None)
    if current is not None and not getattr(current, _MARK, False):
        log.warning("airflow.sdk.Asset already has an emit(); assetbus leaves it alone (use "
                    "assetbus.producers.airflow.emit(asset, ...) instead)")
        return False
    setattr(Asset, "emit", _asset_emit)  # noqa: B010 - a method added to Airflow's class
    setattr(Asset, "aemit", _asset_aemit)  # noqa: B010
    return True
