"""Receipt: the persister's fast encoder agrees with the model, in both directions.

Receipts are decoded by the model alone (`decode_receipt`): the emitter reads them one by one and
hands the model to its caller, so there is no second decoder to hold to it.
"""

from __future__ import annotations

import json
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from assetbus.schemas import ErrorCode, Receipt, ReceiptStatus
from assetbus.schemas.codecs import (
    Rejection,
    decode_receipt,
    encode_receipt,
    json_datetime,
    receipt_bytes,
    rejection_bytes,
)
from tests.unit.schemas.codecs.strategies import json_values, optional_texts, texts, topic_names, utc_datetimes


@st.composite
def stored_receipts(draw: st.DrawFn) -> Receipt:
    return Receipt(correlation_id=draw(st.uuids()),
                   status=draw(st.sampled_from([ReceiptStatus.ACCEPTED, ReceiptStatus.DUPLICATE])),
                   event_id=draw(st.integers(1, 2**62)), timestamp=draw(utc_datetimes), asset_name=draw(texts),
                   dedupe_key=draw(texts))


def fast_bytes(receipt: Receipt) -> bytes:
    assert receipt.event_id is not None and receipt.timestamp is not None
    assert receipt.asset_name is not None and receipt.dedupe_key is not None
    return receipt_bytes(str(receipt.correlation_id), receipt.status.value, receipt.event_id,
                         json_datetime(receipt.timestamp), receipt.asset_name, receipt.dedupe_key)


@settings(max_examples=100)
@given(receipt=stored_receipts())
def test_a_fast_receipt_decodes_to_the_receipt_it_stands_for(receipt: Receipt) -> None:
    assert decode_receipt(fast_bytes(receipt)) == receipt


@settings(max_examples=100)
@given(receipt=stored_receipts())
def test_the_models_encoding_is_the_fast_encoding(receipt: Receipt) -> None:
    assert json.loads(encode_receipt(receipt)) == json.loads(fast_bytes(receipt))


@given(correlation_id=st.uuids(), reply_to=topic_names, code=st.sampled_from(list(ErrorCode)), message=texts,
       asset_name=optional_texts)
def test_a_rejection_decodes_to_a_rejected_receipt_with_its_code(
        correlation_id: uuid.UUID, reply_to: str, code: ErrorCode, message: str, asset_name: str | None) -> None:
    receipt = decode_receipt(rejection_bytes(Rejection(correlation_id, reply_to, "p", code, message, asset_name)))
    assert receipt == Receipt(correlation_id=correlation_id, status=ReceiptStatus.REJECTED, asset_name=asset_name,
                              error_code=code, error_message=message)


@given(receipt=stored_receipts(), field=st.sampled_from(["correlation_id", "status", "event_id", "timestamp"]),
       value=json_values)
def test_a_broken_receipt_is_refused(receipt: Receipt, field: str, value: object) -> None:
    data = json.loads(fast_bytes(receipt))
    data[field] = value
    try:
        decoded = decode_receipt(json.dumps(data).encode())
    except ValidationError:
        return
    assert decoded == Receipt.model_validate(data), "accepted only what the model accepts"
