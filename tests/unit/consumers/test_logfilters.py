"""The consumer-only start-up notice is dropped; every other record passes."""

from __future__ import annotations

import logging

from assetbus.consumers.logfilters import ConsumerOnlyNotice


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("assetbus.persister", logging.WARNING, __file__, 1, message, None, None)


def test_the_consumer_only_notice_is_dropped() -> None:
    notice = record("Topic creation is skipped in consumer-only mode. Make sure the topics exist.")
    assert ConsumerOnlyNotice().filter(notice) is False


def test_other_warnings_pass() -> None:
    assert ConsumerOnlyNotice().filter(record("database unavailable, retrying the batch in 0.2s")) is True
