"""A checked emission and its bytes on the wire.

`prepare()` runs every client-side check and fixes the command id (so every resend is the same
command). `CommandEncoder` turns it into EmissionCommand JSON without building a pydantic model:
the part that is the same for every command of one producer and token (schema version, producer,
reply topic, source, token) is encoded once, so a command costs a few string joins. A unit test
holds it equal to `EmissionCommand.model_dump_json()`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assetbus.producers.errors import InvalidEmission
from assetbus.producers.tokens import source_of
from assetbus.producers.validation import check_asset, check_dedupe_key, check_partition, encode_extra
from assetbus.schemas import SCHEMA_VERSION, AssetRef, EmissionCommand, Provenance
from assetbus.schemas.compat import UTC

_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_string: Callable[[str], str] = json.encoder.encode_basestring


@dataclass(slots=True)
class EmissionRequest:
    """One checked emission, not yet bound to a producer or token. Treat it as immutable: its
    command id is what makes every resend the same command. (Not frozen: frozen dataclasses
    cost a few microseconds more per emission.)"""

    command_id: uuid.UUID
    asset: AssetRef
    extra: dict[str, Any]
    extra_json: str
    partition_key: str | None
    partition_date: datetime | None
    dedupe_key: str | None
    emitted_at: datetime
    timeout_s: float | None = None
    attempts: int | None = None


def prepare(
    asset: object,
    *,
    extra: dict[str, Any] | None = None,
    partition_key: str | None = None,
    partition_date: datetime | None = None,
    dedupe_key: str | None = None,
    timeout_s: float | None = None,
    attempts: int | None = None,
) -> EmissionRequest:
    """Check everything that can be checked before sending; raises InvalidEmission."""
    ref = check_asset(asset)
    checked, extra_json = encode_extra(extra)
    if partition_key is not None or partition_date is not None:
        check_partition(partition_key, partition_date)
    if dedupe_key is not None:
        check_dedupe_key(dedupe_key)
    if timeout_s is not None and not timeout_s > 0:
        raise InvalidEmission("timeout_s", "must be a positive number of seconds")
    return EmissionRequest(uuid.uuid4(), ref, checked, extra_json, partition_key, partition_date, dedupe_key,
                           datetime.now(UTC), timeout_s, attempts)


def _timestamp(value: datetime) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class CommandEncoder:
    """Encodes requests as EmissionCommand JSON for one (producer id, reply topic, token)."""

    def __init__(self, producer_id: str, reply_to: str, token: str) -> None:
        self.source: Provenance = source_of(token)
        self.producer_id = producer_id
        self.reply_to = reply_to
        self.token = token
        head = _json({"schema_version": SCHEMA_VERSION, "producer_id": producer_id, "reply_to": reply_to,
                      "source": self.source.model_dump(mode="json"), "token": token})
        self._head = head[:-1] + ',"command_id":"'
        self._assets: dict[AssetRef, str] = {}

    def encode(self, request: EmissionRequest) -> bytes:
        asset = self._assets.get(request.asset)
        if asset is None:
            asset = self._assets[request.asset] = _json({"name": request.asset.name, "uri": request.asset.uri})
        date = request.partition_date
        return "".join((
            self._head, str(request.command_id),
            '","asset":', asset,
            ',"extra":', request.extra_json,
            ',"partition_key":', "null" if request.partition_key is None else _string(request.partition_key),
            ',"partition_date":', "null" if date is None else '"' + _timestamp(date) + '"',
            ',"dedupe_key":', "null" if request.dedupe_key is None else _string(request.dedupe_key),
            ',"emitted_at":"', _timestamp(request.emitted_at), '"}',
        )).encode()

    def command(self, request: EmissionRequest) -> EmissionCommand:
        """The same command as a validated model (for callers that want to see or keep it)."""
        return EmissionCommand(
            command_id=request.command_id, producer_id=self.producer_id, reply_to=self.reply_to,
            asset=request.asset, source=self.source, token=self.token, extra=request.extra,
            partition_key=request.partition_key, partition_date=request.partition_date,
            dedupe_key=request.dedupe_key, emitted_at=request.emitted_at)


def encode_command(command: EmissionCommand) -> bytes:
    """Bytes of a command built elsewhere (e.g. by hand in a test)."""
    return command.model_dump_json().encode()
