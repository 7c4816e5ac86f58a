"""The wire contract of assetbus: messages, topic names, error codes, schema version. No I/O."""

from schemas.commands import AssetRef, EmissionCommand
from schemas.errors import DeadLetterReason, ErrorCode
from schemas.events import AssetEvent
from schemas.jsonschema import json_schemas
from schemas.limits import EXTRA_MAX_BYTES, KEY_MAX_LENGTH, NAME_MAX_LENGTH
from schemas.provenance import EmitterClaims, Provenance, SourceKind, task_instance_id
from schemas.readiness import ReadinessSignal, TriggeringEvent
from schemas.receipts import Receipt, ReceiptStatus
from schemas.topics import DEFAULT_PREFIX, Topics
from schemas.version import SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS

__all__ = [
    "DEFAULT_PREFIX",
    "EXTRA_MAX_BYTES",
    "KEY_MAX_LENGTH",
    "NAME_MAX_LENGTH",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "AssetEvent",
    "AssetRef",
    "DeadLetterReason",
    "EmissionCommand",
    "EmitterClaims",
    "ErrorCode",
    "Provenance",
    "ReadinessSignal",
    "Receipt",
    "ReceiptStatus",
    "SourceKind",
    "Topics",
    "TriggeringEvent",
    "json_schemas",
    "task_instance_id",
]
