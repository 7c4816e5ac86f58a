"""Receipts and asset events assembled from fragments are exactly what the contract's models say."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from assetbus.consumers.persister.batch import serialize_extra
from assetbus.schemas import AssetEvent, AssetRef, ErrorCode, Provenance, Receipt, ReceiptStatus, SourceKind
from assetbus.schemas.codecs import Fragments, Rejection, event_bytes, receipt_bytes, rejection_bytes

SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="r-1", task_id="load", map_index=3, try_number=2)
texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=30)


@given(name=texts, key=texts, status=st.sampled_from([ReceiptStatus.ACCEPTED, ReceiptStatus.DUPLICATE]),
       event_id=st.integers(1, 2**62), when=st.datetimes(timezones=st.just(UTC)))
def test_an_accepted_or_duplicate_receipt_parses_to_the_receipt_it_stands_for(
        name: str, key: str, status: ReceiptStatus, event_id: int, when: datetime) -> None:
    command_id = uuid.uuid4()
    raw = receipt_bytes(str(command_id), status.value, event_id, Fragments().time(when), name, key)
    expected = Receipt(correlation_id=command_id, status=status, event_id=event_id, timestamp=when, asset_name=name,
                       dedupe_key=key)
    assert Receipt.model_validate_json(raw) == expected
    assert json.loads(raw) == json.loads(expected.model_dump_json())


def test_a_rejection_carries_its_code_and_message() -> None:
    rejection = Rejection(uuid.uuid4(), "replies", "p", ErrorCode.EXTRA_TOO_LARGE, "too big", "orders")
    receipt = Receipt.model_validate_json(rejection_bytes(rejection))
    assert (receipt.status, receipt.error_code, receipt.error_message) == (ReceiptStatus.REJECTED,
                                                                           ErrorCode.EXTRA_TOO_LARGE, "too big")


zones = st.sampled_from([UTC, timezone(timedelta(hours=2))])


@given(name=texts, uri=texts, extra=st.dictionaries(texts, st.integers() | texts | st.none(), max_size=4),
       key=st.none() | texts, date=st.none() | st.datetimes(timezones=zones))
def test_an_asset_event_parses_to_the_event_it_stands_for(name: str, uri: str, extra: dict[str, object],
                                                          key: str | None, date: datetime | None) -> None:
    command_id, stored_at, fragments = uuid.uuid4(), datetime.now(UTC), Fragments()
    raw = event_bytes(41, fragments.asset(name, uri), serialize_extra(extra), key, date, "batch-41", str(command_id),
                      SOURCE.model_dump_json(), fragments.time(stored_at))
    expected = AssetEvent(event_id=41, asset=AssetRef(name=name, uri=uri), extra=extra, partition_key=key,
                          partition_date=date, dedupe_key="batch-41", command_id=command_id, source=SOURCE,
                          timestamp=stored_at)
    parsed = AssetEvent.model_validate_json(raw)
    assert parsed == expected
    assert parsed.partition_date is None or parsed.partition_date.utcoffset() == timedelta(0), "given in UTC"
