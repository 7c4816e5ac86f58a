"""Machine-readable codes carried by rejected receipts and dead letters."""

from __future__ import annotations

from assetbus.schemas.compat import StrEnum


class ErrorCode(StrEnum):
    """Why a command was rejected. Stable strings: clients switch on them."""

    INVALID_COMMAND = "invalid_command"
    """The command parsed as JSON but breaks the contract (a field is missing or malformed)."""
    UNSUPPORTED_SCHEMA_VERSION = "unsupported_schema_version"
    """The command's schema_version is not one this persister reads."""
    ASSET_NOT_FOUND = "asset_not_found"
    """No active asset is registered with that name and URI."""
    UNAUTHORIZED = "unauthorized"
    """The token is missing, forged, expired, or names another source than the body claims."""
    ATTEMPT_ENDED = "attempt_ended"
    """The token was minted from Airflow's attestation of its attempt, and that attempt ended (plus the
    callbacks' grace) before the token was used: it lives no longer than its attempt."""
    INSUFFICIENT_SCOPE = "insufficient_scope"
    """The token is valid but lacks the `emit` scope."""
    ASSET_NOT_DECLARED = "asset_not_declared"
    """The token's publication policy (`publish` claim) does not name this asset; the message names it."""
    INVALID_PARTITION = "invalid_partition"
    """Partition arguments break the rules (a date without key, a naive date, an empty key)."""
    EXTRA_TOO_LARGE = "extra_too_large"
    """`extra` serializes to more than the limit."""
    INTERNAL = "internal"
    """The service failed on this command; retrying the same command is safe."""


class DeadLetterReason(StrEnum):
    """Why raw bytes went to the dead-letter topic instead of getting a receipt."""

    NOT_JSON = "not_json"
    NOT_A_COMMAND = "not_a_command"
    NO_REPLY_ADDRESS = "no_reply_address"
