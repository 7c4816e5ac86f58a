"""Emit on Airflow's own `airflow.sdk.Asset` from a running task or callback (docs/airflow.md, "Emitting from
tasks"): `emit()` / `aemit()` under the running attempt's token, waiting for the receipt, and the opt-in
`install_asset_emit()`, which gives Airflow's Asset class `emit()` / `aemit()` (Airflow PR #74726's signature).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from assetbus.producers.airflow.attempt import Attempt, asset_ref, attempt_from_context, running_attempt
from assetbus.producers.airflow.connection import default_conn_id, settings_source, worker_access
from assetbus.producers.airflow.credentials import token_source
from assetbus.producers.airflow.runtime import check_airflow_version
from assetbus.producers.assets import Asset as Handle
from assetbus.producers.context import EmissionContext, task_context
from assetbus.producers.errors import BrokerUnavailable, EmitterError, InvalidEmission
from assetbus.producers.options import SendOptions
from assetbus.schemas import Receipt

if TYPE_CHECKING:
    from assetbus.producers.testing import InMemoryEmitter

_offline: list[InMemoryEmitter] = []
"""The test doubles that stand in for the API and Kafka (`assetbus.producers.airflow.testing.offline`)."""


class AssetEmitConflict(EmitterError):
    """Airflow's `Asset` has an `emit()` of its own: assetbus does not replace it."""


def _handle(asset: object) -> Handle:
    ref = asset_ref(asset)
    if ref is None:
        raise InvalidEmission("asset", f"{type(asset).__name__} has no name and URI (only Assets can be emitted)")
    return Handle(ref.name, ref.uri)


@contextmanager
def attempt_context(attempt: Attempt, conn_id: str | None = None) -> Iterator[EmissionContext]:
    """Emit as `attempt`: its token (asked of the API), Kafka and topics, and its declared outlets (and
    inlets, in the attempt's callbacks)."""
    if _offline:
        bus = _offline[-1]
        if attempt.is_task:
            offline = bus.task(attempt.dag_id, attempt.run_id, str(attempt.task_id),
                               map_index=-1 if attempt.map_index is None else attempt.map_index,
                               try_number=attempt.try_number or 1, outlets=attempt.publishable)
        else:
            offline = bus.dag_run(attempt.dag_id, attempt.run_id)
        with offline as context:
            yield context
        return
    conn_id = conn_id or default_conn_id()
    credentials = token_source(conn_id).credentials(attempt)
    try:
        with task_context(credentials.token, kafka=credentials.kafka, topic_prefix=credentials.topic_prefix,
                          outlets=attempt.publishable) as context:
            yield context
    except BrokerUnavailable as error:  # say which connection set what the emitter could not start on
        if error.connection is None or error.cause is None:
            raise
        raise BrokerUnavailable.starting(error.connection, error.cause, error.topic_prefix,
                                         where=settings_source(worker_access(conn_id))) from error.cause


def _attempt(context: Mapping[str, Any] | None) -> Attempt:
    return attempt_from_context(context) if context is not None else running_attempt()


def emit(asset: object, *, context: Mapping[str, Any] | None = None, conn_id: str | None = None,
         raise_on_reject: bool = True, **options: Unpack[SendOptions]) -> Receipt:
    """Emit `asset` (an Airflow Asset) as the running attempt, or as the one of a callback's `context`."""
    handle = _handle(asset)
    with attempt_context(_attempt(context), conn_id):
        return handle.emit(raise_on_reject=raise_on_reject, **options)


async def aemit(asset: object, *, context: Mapping[str, Any] | None = None, conn_id: str | None = None,
                raise_on_reject: bool = True, **options: Unpack[SendOptions]) -> Receipt:
    """`emit()` for async task code."""
    handle = _handle(asset)
    with attempt_context(_attempt(context), conn_id):
        return await handle.aemit(raise_on_reject=raise_on_reject, **options)


def _asset_emit(self: object, **options: Unpack[SendOptions]) -> Receipt:
    """Emit "this asset (partition) is ready now" from the running task, and wait for the receipt (assetbus)."""
    return emit(self, **options)


async def _asset_aemit(self: object, **options: Unpack[SendOptions]) -> Receipt:
    """`emit()` for async task code (assetbus)."""
    return await aemit(self, **options)


def install_asset_emit() -> None:
    """Opt in to `asset.emit()` / `asset.aemit()` on `airflow.sdk.Asset` (idempotent).

    Raises AirflowVersionMismatch on an Airflow older than 3.3, and AssetEmitConflict if Airflow's
    Asset already has an `emit` or `aemit` that assetbus did not put there.
    """
    check_airflow_version()
    from airflow.sdk import Asset

    for name in ("emit", "aemit"):
        current = getattr(Asset, name, None)
        if current is not None and current not in (_asset_emit, _asset_aemit):
            raise AssetEmitConflict(f"airflow.sdk.Asset already has an {name}() of its own ({current!r}); "
                                    f"assetbus does not replace it: call assetbus.producers.airflow.{name}"
                                    f"(asset, ...) instead of install_asset_emit()")
    setattr(Asset, "emit", _asset_emit)  # noqa: B010 - a method added to Airflow's class
    setattr(Asset, "aemit", _asset_aemit)  # noqa: B010
