"""Receipt on the wire: the persister's fast encoder for accepted and duplicate receipts, the
model's encoding for everything else, and the decoder (the model: receipts are read one by one,
by the emitter that waits for them, and the caller keeps the model)."""

from __future__ import annotations

from assetbus.schemas.codecs.command_outcomes import Rejection
from assetbus.schemas.codecs.text import json_str
from assetbus.schemas.codecs.typed import model_codec
from assetbus.schemas.receipts import Receipt, ReceiptStatus
from assetbus.schemas.version import SCHEMA_VERSION


def receipt_bytes(correlation_id: str, status: str, event_id: int, timestamp_json: str,
                  asset_name: str, dedupe_key: str) -> bytes:
    """An accepted or duplicate receipt (the hot path). `correlation_id` is the command id in
    canonical text, `status` the ReceiptStatus value, `timestamp_json` from `json_datetime`."""
    return (f'{{"schema_version":{SCHEMA_VERSION},"correlation_id":"{correlation_id}","status":"{status}",'
            f'"event_id":{event_id},"timestamp":{timestamp_json},"asset_name":{json_str(asset_name)},'
            f'"dedupe_key":{json_str(dedupe_key)},"error_code":null,"error_message":null}}').encode()


encode_receipt, decode_receipt = model_codec(Receipt)


def rejection_bytes(rejection: Rejection) -> bytes:
    """A rejected receipt, with its machine-readable code (rare: through the model)."""
    return encode_receipt(Receipt(correlation_id=rejection.correlation_id, status=ReceiptStatus.REJECTED,
                                  asset_name=rejection.asset_name, error_code=rejection.code,
                                  error_message=rejection.message))
