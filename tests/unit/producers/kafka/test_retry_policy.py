"""The retry policy: jittered exponential delays within bounds, a total deadline, non-retriable errors pass."""

from __future__ import annotations

import random

import pytest

from assetbus.producers.kafka import RetryPolicy, RetryTimeout, retry_until


def test_delays_grow_to_the_cap_and_stay_within_the_jitter_band() -> None:
    policy = RetryPolicy(initial_s=0.1, max_s=1.0, multiplier=2.0, jitter=0.5)
    backoff = policy.backoff(random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True)), delays


def test_jitter_spreads_processes_that_retry_together() -> None:
    policy = RetryPolicy(initial_s=1.0, max_s=1.0)
    first = {round(policy.backoff(random.Random(seed)).next_delay(), 6) for seed in range(20)}
    assert len(first) == 20


def test_reset_starts_the_back_off_again_and_no_jitter_is_exact() -> None:
    backoff = RetryPolicy(initial_s=0.1, max_s=5.0, jitter=0).backoff()
    assert [backoff.next_delay() for _ in range(3)] == [0.1, 0.2, 0.4]
    backoff.reset()
    assert backoff.next_delay() == 0.1


def test_an_inconsistent_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        RetryPolicy(initial_s=2.0, max_s=1.0)
    with pytest.raises(ValueError, match="inconsistent"):
        RetryPolicy(jitter=1.5)


class Transient(ConnectionError):
    """A transient fault by the toolkit's convention (aiokafka's): its `retriable` attribute is true."""

    retriable = True


async def test_by_default_only_an_error_marked_retriable_is_retried() -> None:
    calls = 0

    async def plain() -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("no retriable attribute")

    with pytest.raises(ConnectionError):
        await retry_until(plain, RetryPolicy(initial_s=0.001, max_s=0.002, timeout_s=5), what="plain")
    assert calls == 1


async def test_a_policy_with_max_attempts_gives_up_after_that_many() -> None:
    calls = 0

    async def down() -> None:
        nonlocal calls
        calls += 1
        raise Transient("refused")

    with pytest.raises(RetryTimeout) as caught:
        await retry_until(down, RetryPolicy(initial_s=0.001, max_s=0.002, max_attempts=4), what="Kafka")
    assert calls == 4 and caught.value.attempts == 4


async def test_retry_until_returns_once_the_operation_succeeds() -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise Transient("not yet")
        return "up"

    assert await retry_until(flaky, RetryPolicy(initial_s=0.001, max_s=0.002), what="flaky") == "up"
    assert calls == 3


async def test_retry_until_gives_up_after_the_deadline_with_the_last_error() -> None:
    async def down() -> None:
        raise Transient("refused")

    with pytest.raises(RetryTimeout) as caught:
        await retry_until(down, RetryPolicy(initial_s=0.01, max_s=0.05, timeout_s=0.2), what="Kafka")
    assert caught.value.attempts >= 2
    assert isinstance(caught.value.last_error, Transient)
    assert str(caught.value).startswith("Kafka not available after")


async def test_a_hanging_attempt_is_cut_at_the_deadline() -> None:
    async def hangs() -> None:
        import asyncio

        await asyncio.sleep(60)

    with pytest.raises(RetryTimeout):
        await retry_until(hangs, RetryPolicy(initial_s=0.01, max_s=0.02, timeout_s=0.2), what="a hanging broker")


async def test_an_error_that_is_not_retriable_propagates_at_once() -> None:
    calls = 0

    async def wrong_password() -> None:
        nonlocal calls
        calls += 1
        raise PermissionError("authentication failed")

    with pytest.raises(PermissionError):
        await retry_until(wrong_password, RetryPolicy(initial_s=0.01, timeout_s=5), what="Kafka",
                          retriable=lambda error: not isinstance(error, PermissionError))
    assert calls == 1


async def test_retry_until_hands_each_retried_failure_and_its_delay_to_on_retry() -> None:
    failures = [Transient("one"), Transient("two")]
    seen: list[tuple[str, float]] = []

    async def operation() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    policy = RetryPolicy(initial_s=0.001, max_s=0.002, jitter=0)
    result = await retry_until(operation, policy, what="x",
                               on_retry=lambda error, delay: seen.append((str(error), delay)))
    assert result == "done"
    assert seen == [("one", 0.001), ("two", 0.002)]


def test_a_retry_timeout_is_a_kafka_toolkit_error() -> None:
    from assetbus.producers.kafka.errors import KafkaToolkitError

    assert isinstance(RetryTimeout("x", 1.0, 2, None), KafkaToolkitError)
