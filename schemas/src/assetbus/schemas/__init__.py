"""The wire contract of assetbus: messages, topic names, error codes, schema version. No I/O."""

from assetbus.schemas.claims import (
    ANY_ASSET,
    SCOPE_AIRFLOW_ATTESTED,
    SCOPE_DAG_SELF,
    SCOPE_EMIT,
    SCOPE_TASK_MAPPED,
    SCOPE_TASK_SELF,
    EmitterClaims,
)
from assetbus.schemas.commands import AssetRef, EmissionCommand
from assetbus.schemas.deadletters import DEAD_LETTER_HEADERS, REDRIVE_HEADERS
from assetbus.schemas.errors import DeadLetterReason, ErrorCode
from assetbus.schemas.events import AssetEvent
from assetbus.schemas.jsonschema import json_schemas
from assetbus.schemas.limits import EXTRA_MAX_BYTES, KEY_MAX_LENGTH, NAME_MAX_LENGTH
from assetbus.schemas.provenance import Provenance, SourceKind, task_instance_id
from assetbus.schemas.readiness import ReadinessSignal, TriggeringEvent
from assetbus.schemas.receipts import Receipt, ReceiptStatus
from assetbus.schemas.topics import DEFAULT_PREFIX, Topics
from assetbus.schemas.version import SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS

__all__ = ["ANY_ASSET", "DEAD_LETTER_HEADERS", "DEFAULT_PREFIX", "EXTRA_MAX_BYTES", "KEY_MAX_LENGTH", "NAME_MAX_LENGTH",
           "REDRIVE_HEADERS", "SCHEMA_VERSION", "SCOPE_AIRFLOW_ATTESTED", "SCOPE_DAG_SELF", "SCOPE_EMIT",
           "SCOPE_TASK_MAPPED", "SCOPE_TASK_SELF", "SUPPORTED_SCHEMA_VERSIONS", "AssetEvent", "AssetRef",
           "DeadLetterReason", "EmissionCommand", "EmitterClaims", "ErrorCode", "Provenance", "ReadinessSignal",
           "Receipt", "ReceiptStatus", "SourceKind", "Topics", "TriggeringEvent", "json_schemas", "task_instance_id"]
