"""The suite's own wait helper: a retriable Kafka error is "not yet", anything else fails at once."""

from __future__ import annotations

import pytest
from aiokafka.errors import GroupCoordinatorNotAvailableError, UnknownTopicOrPartitionError, UnsupportedVersionError

from tests.helpers import wait_for


async def test_a_retriable_kafka_error_is_waited_past() -> None:
    calls = 0

    async def electing() -> int:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise GroupCoordinatorNotAvailableError()  # what the cluster answers while it elects a coordinator
        return calls

    assert await wait_for(electing, timeout_s=5, interval=0.001) == 3


async def test_an_error_that_is_not_retriable_fails_at_once() -> None:
    async def broken() -> bool:
        raise UnsupportedVersionError()

    with pytest.raises(UnsupportedVersionError):
        await wait_for(broken, timeout_s=5, interval=0.001)


async def test_a_timeout_names_the_last_retriable_error() -> None:
    async def missing() -> bool:
        raise UnknownTopicOrPartitionError()

    with pytest.raises(AssertionError, match="UnknownTopicOrPartitionError"):
        await wait_for(missing, timeout_s=0.05, interval=0.001, what="a topic")
