"""A dead letter's headers become a typed record: reason, error and where the bytes came from."""

from __future__ import annotations

from assetbus.consumers.observe.deadletters import PREVIEW_BYTES, dead_letter


def test_the_persisters_headers_name_the_reason_and_the_source() -> None:
    headers = [("assetbus.dlq.reason", b"not_json"), ("assetbus.dlq.error", b"value is not JSON: line 1"),
               ("assetbus.dlq.source.topic", b"assetbus.emissions"), ("assetbus.dlq.source.partition", b"3"),
               ("assetbus.dlq.source.offset", b"17"), ("traceparent", b"00-abc")]
    record = dead_letter("assetbus.emissions.dlq", 0, 5, 1_790_000_000_000, b"orders", b"{not json", headers)
    assert (record.reason, record.error) == ("not_json", "value is not JSON: line 1")
    assert (record.source_topic, record.source_partition, record.source_offset) == ("assetbus.emissions", 3, 17)
    assert record.key == "orders" and record.value_preview == "{not json" and record.value_size == 9
    assert "traceparent" not in record.headers and record.timestamp.year == 2026


def test_a_record_without_headers_or_text_still_reads() -> None:
    record = dead_letter("t.dlq", 0, 0, 0, None, b"\xff" * (PREVIEW_BYTES + 10), [])
    assert record.reason == "unknown" and record.source_offset is None and record.key is None
    assert record.value_size == PREVIEW_BYTES + 10 and len(record.value_preview) == PREVIEW_BYTES
