"""Run Airflow tasks that emit without an assetbus API or Kafka, `dag.test()` and pytest included: `offline()`
(docs/airflow.md, "Testing DAGs offline").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from assetbus.producers.airflow.attempt import asset_ref
from assetbus.producers.airflow.emit import _offline
from assetbus.producers.testing import InMemoryEmitter
from assetbus.schemas import AssetEvent, ErrorCode

__all__ = ["AirflowInMemoryEmitter", "offline"]


def _ref(asset: object) -> object:
    return asset_ref(asset) or asset


class AirflowInMemoryEmitter(InMemoryEmitter):
    """The SDK's test double, taking Airflow's own Assets wherever it takes an asset."""

    def __init__(self, *, registered: Iterable[object] | None = None, token: str | None = None,
                 secret: str | None = None) -> None:
        super().__init__(registered=None if registered is None else [_ref(a) for a in registered], token=token,
                         secret=secret)

    def reject(self, asset: object, code: ErrorCode, message: str = "rejected by the test") -> None:
        super().reject(_ref(asset), code, message)

    def emitted(self, asset: object) -> list[AssetEvent]:
        return super().emitted(_ref(asset))


@contextmanager
def offline(bus: InMemoryEmitter | None = None, *, registered: Iterable[object] | None = None
            ) -> Iterator[InMemoryEmitter]:
    """Emissions made inside the block (in any thread of this process) land in `bus` (a new one by default,
    accepting `registered` assets, or any asset when None)."""
    bus = bus if bus is not None else AirflowInMemoryEmitter(registered=registered)
    _offline.append(bus)
    try:
        yield bus
    finally:
        _offline.remove(bus)
