"""Receipts and asset events as bytes, assembled from JSON fragments the persister already has.

Building a pydantic model per record and serializing it costs 7-50 µs (model_construct is the
slowest); the receipt and the event of an accepted command are most of the persister's output, so
they are assembled here from pre-serialized parts (`extra` is serialized once for the database and
reused, assets, sources and timestamps are serialized once per batch). The result is exactly what
`Receipt` / `AssetEvent` parse back (the unit tests compare them); rejections and the rare
republished originals go through the models.
"""

from __future__ import annotations

from datetime import UTC, datetime
from json.encoder import encode_basestring

from pydantic_core import to_json

from assetbus.consumers.persister.decode import Rejection
from assetbus.consumers.storage import StoredEvent
from assetbus.schemas import SCHEMA_VERSION, Provenance, Receipt, ReceiptStatus, SourceKind


def json_str(value: str | None) -> str:
    """A JSON string (or null); non-ASCII stays UTF-8 like pydantic's output."""
    return "null" if value is None else encode_basestring(value)


def json_datetime(value: datetime | None) -> str:
    """Pydantic's JSON form of a datetime (ISO 8601, `Z` for UTC)."""
    return "null" if value is None else to_json(value).decode()


class Fragments:
    """Serialized pieces shared by many records: assets and timestamps (bounded caches)."""

    def __init__(self) -> None:
        self._assets: dict[tuple[str, str], str] = {}
        self._times: dict[datetime, str] = {}

    def asset(self, name: str, uri: str) -> str:
        key = (name, uri)
        known = self._assets.get(key)
        if known is None:
            if len(self._assets) >= _CACHE_LIMIT:
                self._assets.clear()
            known = self._assets[key] = f'{{"name":{json_str(name)},"uri":{json_str(uri)}}}'
        return known

    def time(self, value: datetime) -> str:
        known = self._times.get(value)
        if known is None:
            if len(self._times) >= _CACHE_LIMIT:
                self._times.clear()
            known = self._times[value] = json_datetime(value)
        return known


_CACHE_LIMIT = 10_000


def receipt_bytes(correlation_id: str, status: str, event_id: int, timestamp_json: str,
                  asset_name: str, dedupe_key: str) -> bytes:
    """An accepted or duplicate receipt. `correlation_id` is the command id as text, `status` the
    ReceiptStatus value ("accepted" or "duplicate")."""
    return (f'{{"schema_version":{SCHEMA_VERSION},"correlation_id":"{correlation_id}","status":"{status}",'
            f'"event_id":{event_id},"timestamp":{timestamp_json},"asset_name":{json_str(asset_name)},'
            f'"dedupe_key":{json_str(dedupe_key)},"error_code":null,"error_message":null}}').encode()


def rejection_bytes(rejection: Rejection) -> bytes:
    """A rejected receipt, with its machine-readable code."""
    return Receipt(correlation_id=rejection.correlation_id, status=ReceiptStatus.REJECTED,
                   asset_name=rejection.asset_name, error_code=rejection.code,
                   error_message=rejection.message).model_dump_json().encode()


def event_bytes(event_id: int, asset_json: str, extra_json: str, partition_key: str | None,
                partition_date: datetime | None, dedupe_key: str, command_id: str, source_json: str,
                timestamp_json: str) -> bytes:
    """An asset event. The partition date is given in UTC, as the database gives it back, so a
    republished duplicate carries the same values as the first publication."""
    date = json_datetime(partition_date.astimezone(UTC)) if partition_date is not None else "null"
    return (f'{{"schema_version":{SCHEMA_VERSION},"event_id":{event_id},"asset":{asset_json},'
            f'"extra":{extra_json},"partition_key":{json_str(partition_key)},"partition_date":{date},'
            f'"dedupe_key":{json_str(dedupe_key)},"command_id":"{command_id}","source":{source_json},'
            f'"timestamp":{timestamp_json}}}').encode()


def stored_event_bytes(event: StoredEvent, fragments: Fragments) -> bytes:
    """The asset event of an event stored earlier (republished unchanged for a duplicate)."""
    source = Provenance(kind=SourceKind(event.source_kind), dag_id=event.dag_id, run_id=event.run_id,
                        task_id=event.task_id, map_index=event.map_index, try_number=event.try_number)
    return event_bytes(event.id, fragments.asset(event.asset_name, event.asset_uri),
                       to_json(event.extra).decode(), event.partition_key, event.partition_date, event.dedupe_key,
                       str(event.command_id), source.model_dump_json(), fragments.time(event.created_at))
