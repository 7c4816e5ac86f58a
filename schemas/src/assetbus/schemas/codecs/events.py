"""AssetEvent on the wire: the persister's fast encoder, the model's encoding, and the decoder.

The event of an accepted command is most of the persister's output, so `event_bytes` assembles it
from JSON the persister already has: `extra` as serialized for the database, the asset, source and
timestamp serialized once per batch or token. The result parses to the `AssetEvent` it stands for
(`tests/unit/schemas/codecs` checks it both ways).
"""

from __future__ import annotations

from datetime import datetime

from assetbus.schemas.codecs.text import json_datetime, json_str
from assetbus.schemas.codecs.typed import model_codec
from assetbus.schemas.compat import UTC
from assetbus.schemas.events import AssetEvent
from assetbus.schemas.version import SCHEMA_VERSION


def event_bytes(event_id: int, asset_json: str, extra_json: str, partition_key: str | None,
                partition_date: datetime | None, dedupe_key: str, command_id: str, source_json: str,
                timestamp_json: str) -> bytes:
    """An asset event (the hot path). The partition date is written in UTC, as the database gives it
    back, so a republished duplicate carries the same values as the first publication."""
    date = json_datetime(partition_date.astimezone(UTC)) if partition_date is not None else "null"
    return (f'{{"schema_version":{SCHEMA_VERSION},"event_id":{event_id},"asset":{asset_json},'
            f'"extra":{extra_json},"partition_key":{json_str(partition_key)},"partition_date":{date},'
            f'"dedupe_key":{json_str(dedupe_key)},"command_id":"{command_id}","source":{source_json},'
            f'"timestamp":{timestamp_json}}}').encode()


encode_event, decode_event = model_codec(AssetEvent)
