"""Server-side rules for one parsed command: authentication, provenance, partitions, limits, asset."""

from __future__ import annotations

import json

from consumers.auth import TokenError, TokenVerifier
from consumers.persister.decode import Rejection
from consumers.storage import AssetRow, NewEvent
from schemas import EXTRA_MAX_BYTES, EmissionCommand, ErrorCode

DEFAULT_SCOPE = "command"
"""Dedupe scope of commands without an explicit dedupe key: their command id is the key."""


def validate(command: EmissionCommand, assets: dict[str, AssetRow], verifier: TokenVerifier) -> NewEvent | Rejection:
    """A storable event, or the reason the command is rejected. Never raises."""

    def reject(code: ErrorCode, message: str) -> Rejection:
        return Rejection(command.command_id, command.reply_to, command.producer_id, code, message,
                         command.asset.name)

    try:
        claims = verifier.verify(command.token)
    except TokenError as error:
        return reject(ErrorCode.UNAUTHORIZED, error.reason)
    if claims.provenance() != command.source:
        return reject(ErrorCode.UNAUTHORIZED, "the body claims another source than the token names")
    if command.partition_date is not None:
        if command.partition_key is None:
            return reject(ErrorCode.INVALID_PARTITION, "partition_date requires partition_key")
        if command.partition_date.utcoffset() is None:
            return reject(ErrorCode.INVALID_PARTITION, "partition_date must be time-zone aware")
    size = len(json.dumps(command.extra, separators=(",", ":"), ensure_ascii=False).encode())
    if size > EXTRA_MAX_BYTES:
        return reject(ErrorCode.EXTRA_TOO_LARGE, f"extra is {size} bytes; the limit is {EXTRA_MAX_BYTES}")
    asset = assets.get(command.asset.name)
    if asset is None or not asset.active or asset.uri != command.asset.uri:
        return reject(ErrorCode.ASSET_NOT_FOUND,
                      f"no active asset is registered with name {command.asset.name!r} and URI {command.asset.uri!r}")
    source = command.source
    return NewEvent(
        asset_id=asset.id,
        dedupe_scope=source.dedupe_scope() if command.dedupe_key else DEFAULT_SCOPE,
        dedupe_key=command.dedupe_key or str(command.command_id),
        command_id=command.command_id,
        extra=command.extra,
        partition_key=command.partition_key,
        partition_date=command.partition_date,
        source_kind=source.kind.value,
        dag_id=source.dag_id,
        run_id=source.run_id,
        task_id=source.task_id,
        map_index=source.map_index,
        try_number=source.try_number,
    )
