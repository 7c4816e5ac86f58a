"""The AsyncAPI 3.0 document of every assetbus topic: its messages, keys and headers.

Built from the contract itself (the pydantic models, `Topics`, the dead-letter header names), so it
cannot drift from the code; `assetbus contract export` writes it to docs/asyncapi.yaml.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from assetbus.schemas import (
    DEAD_LETTER_HEADERS,
    DEFAULT_PREFIX,
    REDRIVE_HEADERS,
    SCHEMA_VERSION,
    AssetEvent,
    DeadLetterReason,
    EmissionCommand,
    ReadinessSignal,
    Receipt,
)
from assetbus.schemas.deadletters import REASON

REF = "#/components/schemas/{model}"
MODELS: list[type[BaseModel]] = [EmissionCommand, Receipt, AssetEvent, ReadinessSignal]


def _text_headers(described: dict[str, str], required: list[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {"type": "string", "description": text} for name, text in described.items()}
    if REASON in properties:
        properties[REASON]["enum"] = [reason.value for reason in DeadLetterReason]
    return {"type": "object", "properties": properties, "required": required}


def _message(name: str, summary: str, key: str, headers: dict[str, Any] | None = None,
             payload: dict[str, Any] | None = None, content_type: str = "application/json") -> dict[str, Any]:
    """A message whose payload is, unless given, its model's schema (`name` is the model's)."""
    message: dict[str, Any] = {"name": name, "title": name, "summary": summary, "contentType": content_type,
                               "payload": payload or {"$ref": REF.format(model=name)},
                               "bindings": {"kafka": {"key": {"type": "string", "description": key},
                                                      "bindingVersion": "0.5.0"}}}
    if headers is not None:
        message["headers"] = headers
    return message


def _channel(address: str, message: str, description: str, **parameters: str) -> dict[str, Any]:
    channel: dict[str, Any] = {"address": address, "description": description,
                               "messages": {message: {"$ref": f"#/components/messages/{message}"}},
                               "parameters": {"prefix": {"default": DEFAULT_PREFIX,
                                                         "description": "ASSETBUS_TOPIC_PREFIX: shared by every "
                                                                        "topic of one installation."}}}
    for name, text in parameters.items():
        channel["parameters"][name] = {"description": text}
    return channel


def _operation(action: str, channel: str, summary: str) -> dict[str, Any]:
    return {"action": action, "channel": {"$ref": f"#/channels/{channel}"}, "summary": summary}


def asyncapi_document(version: str) -> dict[str, Any]:
    """The document for assetbus `version` (the installed distribution's)."""
    _, schemas = models_json_schema([(m, "serialization") for m in MODELS], ref_template=REF)
    dlq_headers = _text_headers(DEAD_LETTER_HEADERS, [name for name in DEAD_LETTER_HEADERS
                                                      if not name.endswith("truncated_from")])
    return {
        "asyncapi": "3.0.0",
        "info": {"title": "assetbus", "version": version,
                 "description": "Asset-readiness events over Apache Kafka: tasks emit commands, an idempotent "
                                "persister stores each event once and answers with a receipt, a scheduler fans "
                                f"readiness out per partition. Wire schema version {SCHEMA_VERSION}; every value "
                                "is UTF-8 JSON except dead letters, which keep the original bytes."},
        "defaultContentType": "application/json",
        "servers": {"local": {"host": "127.0.0.1:19092", "protocol": "kafka",
                              "description": "The broker `assetbus infra up` starts (KRaft, Kafka 4.x)."}},
        "channels": {
            "emissions": _channel("{prefix}.emissions", "EmissionCommand", "Emission commands, keyed by asset name."),
            "receipts": _channel("{prefix}.receipts", "Receipt", "Receipts, keyed by producer id; the default "
                                 "reply topic (retention one day)."),
            "asset-events": _channel("{prefix}.asset-events", "AssetEvent", "Stored asset events, keyed by asset "
                                     "name."),
            "readiness": _channel("{prefix}.readiness.{dag_id}", "ReadinessSignal", "One signal per consumer run "
                                  "of one consumer DAG, keyed by target partition key.",
                                  dag_id="The consumer DAG's id ([A-Za-z0-9._-])."),
            "emissions-dlq": _channel("{prefix}.emissions.dlq", "DeadLetter", "Records of the emissions topic "
                                      "that are not a command with a reply address, with the reason in headers."),
        },
        "operations": {
            "emit": _operation("send", "emissions", "A task, callback or other producer emits a command."),
            "persist": _operation("receive", "emissions", "The persister stores each event once."),
            "answer": _operation("send", "receipts", "The persister answers on the command's reply_to topic, "
                                 "after the database commit."),
            "announce": _operation("send", "asset-events", "The persister publishes each stored event."),
            "schedule": _operation("receive", "asset-events", "The scheduler maps events to consumer DAGs."),
            "signal": _operation("send", "readiness", "The scheduler publishes one signal per consumer run."),
            "subscribe": _operation("receive", "readiness", "Downstream services run per ready partition."),
            "dead-letter": _operation("send", "emissions-dlq", "The persister sets aside what it cannot answer."),
        },
        "components": {
            "messages": {
                "EmissionCommand": _message("EmissionCommand", "This asset (partition) is ready: store it once and "
                                            "answer.", "The asset's name.", _text_headers(REDRIVE_HEADERS, [])),
                "Receipt": _message("Receipt", "accepted, duplicate or rejected, sent after the commit.",
                                    "The producer_id of the command."),
                "AssetEvent": _message("AssetEvent", "A stored event.", "The asset's name."),
                "ReadinessSignal": _message("ReadinessSignal", "A consumer run is ready.",
                                            "The run's target partition key (empty when unpartitioned)."),
                "DeadLetter": _message("DeadLetter", "The original record, unchanged, with the reason in headers.",
                                       "The original record's key.", dlq_headers,
                                       {"type": "string", "format": "binary",
                                        "description": "The original value's bytes (cut to 512 KiB at most)."},
                                       content_type="application/octet-stream"),
            },
            "schemas": schemas.get("$defs", {}),
        },
    }
