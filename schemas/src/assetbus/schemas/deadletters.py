"""The headers of a dead letter: why the persister could not read the record, and where it came from.

A dead letter keeps the original key and bytes; everything assetbus adds is in these headers (UTF-8
text values). A redriven record carries `REDRIVE_OF` and `REDRIVE_ID` on the emissions topic.
"""

from __future__ import annotations

REASON = "assetbus.dlq.reason"
ERROR = "assetbus.dlq.error"
SOURCE_TOPIC = "assetbus.dlq.source.topic"
SOURCE_PARTITION = "assetbus.dlq.source.partition"
SOURCE_OFFSET = "assetbus.dlq.source.offset"
TRUNCATED_FROM = "assetbus.dlq.truncated_from"
REDRIVE_OF = "assetbus.redrive.of"
REDRIVE_ID = "assetbus.redrive.id"

DEAD_LETTER_HEADERS: dict[str, str] = {
    REASON: "Why the record is here: a DeadLetterReason (not_json, not_a_command, no_reply_address).",
    ERROR: "The parser's message, in words.",
    SOURCE_TOPIC: "Topic the record was read from (the emissions topic).",
    SOURCE_PARTITION: "Its partition there (decimal).",
    SOURCE_OFFSET: "Its offset there (decimal).",
    TRUNCATED_FROM: "Only when the value was cut to fit the broker's size limit: the original length in bytes.",
}
"""Every header the persister puts on a dead letter, with its meaning."""

REDRIVE_HEADERS: dict[str, str] = {
    REDRIVE_OF: "Only on a redriven command: `topic:partition:offset` of the dead letter it replaces.",
    REDRIVE_ID: "Only on a redriven command: the id of its entry in the redrive log (`dlq_redrives`).",
}
"""Headers `assetbus dlq redrive` adds to the record it re-publishes."""
