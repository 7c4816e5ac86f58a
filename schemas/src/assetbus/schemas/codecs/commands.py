"""EmissionCommand on the wire: the emitter's fast encoder, and the model's encoding (the reference).

`CommandEncoder` writes a command without building a pydantic model: the part that is the same for
every command of one producer and token (schema version, producer, reply topic, source, token) is
encoded once, so a command costs a few string joins. It writes what `encode_command` writes for the
same command, up to spacing (`tests/unit/schemas/codecs` checks it both ways).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from assetbus.schemas.codecs.text import compact_json, json_asset, json_datetime
from assetbus.schemas.codecs.typed import model_codec
from assetbus.schemas.commands import AssetRef, EmissionCommand
from assetbus.schemas.provenance import Provenance
from assetbus.schemas.version import SCHEMA_VERSION


@dataclass(slots=True)
class CommandFields:
    """What one emission adds to an encoder's fixed part (the SDK's `EmissionRequest` extends it)."""

    command_id: uuid.UUID
    asset: AssetRef
    extra: dict[str, Any]
    extra_json: str
    """`extra` as compact JSON, serialized once (the emitter measures the size limit on it)."""
    partition_key: str | None
    partition_date: datetime | None
    dedupe_key: str | None
    emitted_at: datetime


encode_command = model_codec(EmissionCommand)[0]
"""The reference encoding: the model's JSON."""


class CommandEncoder:
    """Encodes EmissionCommands for one (producer id, reply topic, source, token)."""

    def __init__(self, producer_id: str, reply_to: str, source: Provenance, token: str) -> None:
        self.producer_id = producer_id
        self.reply_to = reply_to
        self.source = source
        self.token = token
        head = compact_json({"schema_version": SCHEMA_VERSION, "producer_id": producer_id, "reply_to": reply_to,
                             "source": source.model_dump(mode="json"), "token": token})
        self._head = head[:-1] + ',"command_id":"'
        self._assets: dict[AssetRef, str] = {}

    def encode(self, fields: CommandFields) -> bytes:
        asset = self._assets.get(fields.asset)
        if asset is None:
            asset = self._assets[fields.asset] = json_asset(fields.asset.name, fields.asset.uri)
        key, date, dedupe = fields.partition_key, fields.partition_date, fields.dedupe_key
        return "".join((
            self._head, str(fields.command_id),
            '","asset":', asset,
            ',"extra":', fields.extra_json,
            ',"partition_key":', "null" if key is None else encode_basestring(key),
            ',"partition_date":', "null" if date is None else json_datetime(date),
            ',"dedupe_key":', "null" if dedupe is None else encode_basestring(dedupe),
            ',"emitted_at":', json_datetime(fields.emitted_at), '}',
        )).encode()

    def command(self, fields: CommandFields) -> EmissionCommand:
        """The same command as a validated model (for callers that want to see or keep it)."""
        return EmissionCommand(
            command_id=fields.command_id, producer_id=self.producer_id, reply_to=self.reply_to,
            asset=fields.asset, source=self.source, token=self.token, extra=fields.extra,
            partition_key=fields.partition_key, partition_date=fields.partition_date,
            dedupe_key=fields.dedupe_key, emitted_at=fields.emitted_at)
