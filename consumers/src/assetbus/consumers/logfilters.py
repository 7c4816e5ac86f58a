"""Logging filters shared by the services."""

from __future__ import annotations

import logging


class ConsumerOnlyNotice(logging.Filter):
    """Drops FastStream's start-up warning that consumer-only brokers skip topic creation.

    The services create their topics explicitly (`assetbus migrate`, `dags sync`) and run their
    FastStream brokers consumer-only on purpose, so the warning only alarms operators.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "Topic creation is skipped in consumer-only mode" not in record.getMessage()


def quiet_consumer_only_notice(logger: logging.Logger) -> logging.Logger:
    logger.addFilter(ConsumerOnlyNotice())
    return logger
