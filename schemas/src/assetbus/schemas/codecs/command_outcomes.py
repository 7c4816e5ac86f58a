"""Raw record bytes → a command, a rejection (the sender can still be answered), or a dead letter.

Two paths with one outcome: the fast path (`read_command_fast`, ~10 µs for 1 KiB) takes what it
can read by the strictest reading; whatever it does not take goes through `decode_command`, which
parses with `json`, validates with the `EmissionCommand` model and works out *why*, so the answer
carries the right reason. Besides the model, a consumer needs: a supported schema version (given,
not defaulted), a reply topic Kafka accepts, and strings PostgreSQL and UTF-8 can hold.
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from dataclasses import dataclass

from pydantic import ValidationError

from assetbus.schemas.codecs.command_reader import CommandView, read_command_fast
from assetbus.schemas.commands import EmissionCommand
from assetbus.schemas.errors import DeadLetterReason, ErrorCode
from assetbus.schemas.version import SUPPORTED_SCHEMA_VERSIONS

_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
"""What Kafka accepts as a topic name; a reply address that is not one cannot be answered."""


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


def _unstorable(text: str) -> bool:
    """PostgreSQL text cannot hold U+0000, and UTF-8 cannot hold a lone surrogate (JSON's `\\ud800`)."""
    if "\x00" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def has_unstorable_text(data: object) -> bool:
    """True if any string in a parsed JSON value (keys included) cannot be stored."""
    if isinstance(data, str):
        return _unstorable(data)
    if isinstance(data, dict):
        return any(_unstorable(k) or has_unstorable_text(v) for k, v in data.items())
    if isinstance(data, list):
        return any(has_unstorable_text(item) for item in data)
    return False


@functools.lru_cache(maxsize=10_000)
def is_topic_name(name: str) -> bool:
    """Whether Kafka accepts `name` as a topic (answers are remembered: reply topics are few)."""
    return _TOPIC_NAME.match(name) is not None


def read_command(value: bytes | None) -> CommandView | Rejection | DeadLetter:
    """Parse one record value into a `CommandView` (the hot path). Never raises."""
    # Without a `\u` escape or a raw NUL, no string can hold NUL or a lone surrogate (raw control
    # characters and invalid UTF-8 fail parsing). Strict mode accepts a subset of what the slow
    # path accepts (no "1" for 1, no true for 1), so both paths give every input the same outcome.
    if value and b"\\u" not in value and b"\x00" not in value:
        command = read_command_fast(value)
        if command is not None and command.schema_version in SUPPORTED_SCHEMA_VERSIONS \
                and is_topic_name(command.reply_to):
            return command
    outcome = decode_command(value)
    return CommandView.of(outcome) if isinstance(outcome, EmissionCommand) else outcome


def decode_command(value: bytes | None) -> EmissionCommand | Rejection | DeadLetter:
    """Parse one record value into the contract's model, or say why not (the slow path). Never raises."""
    try:
        return _classify(value)
    except Exception as error:  # e.g. nesting too deep for the recursive checks
        return DeadLetter(DeadLetterReason.NOT_A_COMMAND, f"value cannot be read: {type(error).__name__}")


PARTITION_FIELDS = (("partition_key",), ("partition_date",))
"""A malformed partition argument (an empty key, a date that is no date) is `invalid_partition`."""


def _classify(value: bytes | None) -> EmissionCommand | Rejection | DeadLetter:
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
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
    if not is_topic_name(reply_to):
        return DeadLetter(DeadLetterReason.NO_REPLY_ADDRESS, "reply_to is not a valid topic name")
    if _unstorable(producer_id):
        return DeadLetter(DeadLetterReason.NO_REPLY_ADDRESS, "producer_id cannot be encoded as a record key")
    asset = data.get("asset")
    asset_name = asset.get("name") if isinstance(asset, dict) and isinstance(asset.get("name"), str) else None
    if asset_name is not None and _unstorable(asset_name):
        asset_name = None

    def reject(code: ErrorCode, message: str) -> Rejection:
        return Rejection(correlation_id, reply_to, producer_id, code, message, asset_name)

    version = data.get("schema_version")
    if version not in SUPPORTED_SCHEMA_VERSIONS or isinstance(version, bool):
        return reject(ErrorCode.UNSUPPORTED_SCHEMA_VERSION,
                      f"schema_version {version!r} is not supported (supported: {sorted(SUPPORTED_SCHEMA_VERSIONS)})"
                      [:500])
    if has_unstorable_text(data):
        return reject(ErrorCode.INVALID_COMMAND, "strings may not contain NUL characters or lone surrogates")
    try:
        return EmissionCommand.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        code = ErrorCode.INVALID_PARTITION if first["loc"][:1] in PARTITION_FIELDS else ErrorCode.INVALID_COMMAND
        return reject(code, f"{where}: {first['msg']}"[:500])
