"""Turn raw record bytes into a command, a rejection (we can still answer), or a dead letter."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from pydantic import ValidationError

from schemas import SUPPORTED_SCHEMA_VERSIONS, DeadLetterReason, EmissionCommand, ErrorCode


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Bytes that cannot be answered: there is no command id or reply address to answer to."""

    reason: DeadLetterReason
    detail: str


@dataclass(frozen=True, slots=True)
class Rejection:
    """A command that can be answered, but not stored."""

    correlation_id: uuid.UUID
    reply_to: str
    producer_id: str
    code: ErrorCode
    message: str
    asset_name: str | None = None


def _has_nul(data: object) -> bool:
    """PostgreSQL text and jsonb cannot hold U+0000; find it before it poisons a batch."""
    if isinstance(data, str):
        return "\x00" in data
    if isinstance(data, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in data.items())
    if isinstance(data, list):
        return any(_has_nul(item) for item in data)
    return False


def decode(value: bytes | None) -> EmissionCommand | Rejection | DeadLetter:
    """Parse one record value. Never raises."""
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError) as error:
        return DeadLetter(DeadLetterReason.NOT_JSON, f"value is not JSON: {error}"[:500])
    if not isinstance(data, dict):
        return DeadLetter(DeadLetterReason.NOT_A_COMMAND, f"value is a JSON {type(data).__name__}, not an object")
    reply_to, producer_id = data.get("reply_to"), data.get("producer_id")
    try:
        correlation_id = uuid.UUID(str(data.get("command_id")))
    except ValueError:
        return DeadLetter(DeadLetterReason.NO_REPLY_ADDRESS, "command_id is missing or not a UUID")
    if not isinstance(reply_to, str) or not reply_to or not isinstance(producer_id, str) or not producer_id:
        return DeadLetter(DeadLetterReason.NO_REPLY_ADDRESS, "reply_to or producer_id is missing")
    asset = data.get("asset")
    asset_name = asset.get("name") if isinstance(asset, dict) and isinstance(asset.get("name"), str) else None

    def reject(code: ErrorCode, message: str) -> Rejection:
        return Rejection(correlation_id, reply_to, producer_id, code, message, asset_name)

    version = data.get("schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        return reject(ErrorCode.UNSUPPORTED_SCHEMA_VERSION,
                      f"schema_version {version!r} is not supported (supported: {sorted(SUPPORTED_SCHEMA_VERSIONS)})")
    if _has_nul(data):
        return reject(ErrorCode.INVALID_COMMAND, "strings may not contain NUL characters")
    try:
        return EmissionCommand.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return reject(ErrorCode.INVALID_COMMAND, f"{where}: {first['msg']}"[:500])
