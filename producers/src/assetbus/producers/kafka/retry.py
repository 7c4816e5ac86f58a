"""The one retry policy: exponential back-off with full jitter, bounded per step and optionally in total.

Every loop that waits for something transient (a database outage, a broker at start-up, a failed
publish) takes its delays from a `Backoff`, so that many processes retrying at once spread out
instead of hitting the recovering service in lock-step. No dependency: tenacity would add one to the
task-side SDK for a dozen lines.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from assetbus.producers.kafka.errors import KafkaToolkitError

__all__ = ["Backoff", "RetryPolicy", "RetryTimeout", "retriable", "retry_until"]

T = TypeVar("T")


class RetryTimeout(KafkaToolkitError):
    """The policy's deadline passed before the operation succeeded; `last_error` is the last failure."""

    def __init__(self, what: str, waited_s: float, attempts: int, last_error: BaseException | None) -> None:
        detail = f": {type(last_error).__name__}: {last_error}" if last_error is not None else ""
        super().__init__(f"{what} not available after {waited_s:.1f}s and {attempts} attempt(s){detail}")
        self.what = what
        self.waited_s = waited_s
        self.attempts = attempts
        self.last_error = last_error


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait between attempts: `initial_s * multiplier**n`, capped at `max_s`, times a jitter factor."""

    initial_s: float = 0.2
    max_s: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.5
    """Each delay is drawn uniformly from [(1 - jitter) * d, d]: 0 is no jitter, 1 "full jitter". The default
    0.5 spreads processes that retry together while keeping the total wait close to the plain back-off's."""
    timeout_s: float | None = None
    """Give up after this long in total (None: no time bound)."""
    max_attempts: int | None = None
    """Give up after this many attempts (None: no count bound)."""

    def __post_init__(self) -> None:
        if self.initial_s < 0 or self.max_s < self.initial_s or self.multiplier < 1 or not 0 <= self.jitter <= 1 \
                or (self.max_attempts is not None and self.max_attempts < 1):
            raise ValueError(f"inconsistent retry policy: {self}")

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        """A fresh sequence of delays for one operation."""
        return Backoff(self, rng or random.Random())


@dataclass
class Backoff:
    """The delays of one operation's retries; `reset()` after a success."""

    policy: RetryPolicy
    rng: random.Random = field(default_factory=random.Random)
    attempts: int = 0

    def next_delay(self) -> float:
        policy = self.policy
        ceiling = min(policy.max_s, policy.initial_s * policy.multiplier ** min(self.attempts, 64))
        self.attempts += 1
        return ceiling * (1 - policy.jitter * self.rng.random())

    async def sleep(self) -> float:
        delay = self.next_delay()
        await asyncio.sleep(delay)
        return delay

    def reset(self) -> None:
        self.attempts = 0


def retriable(error: BaseException) -> bool:
    """aiokafka's convention, and every assetbus error's: an error whose `retriable` attribute is true is transient
    (a broker moving, a database restarting, an API answering 503); anything else is final."""
    return bool(getattr(error, "retriable", False))


async def retry_until(operation: Callable[[], Awaitable[T]], policy: RetryPolicy, *, what: str,
                      retriable: Callable[[BaseException], bool] = retriable,
                      log: logging.Logger | None = None,
                      on_retry: Callable[[BaseException, float], None] | None = None) -> T:
    """Run `operation` until it succeeds, sleeping per `policy` between failures that are `retriable`.

    Each failure logs one line (`waiting for <what>: ...; retrying in ...`) when given a `log`, and is
    passed with the coming delay to `on_retry` (metrics, a caller's own log line). Raises `RetryTimeout`
    once `policy.timeout_s` has passed; a failure that is not `retriable` (by default: whose `retriable`
    attribute is not true) propagates at once.
    """
    backoff = policy.backoff()
    started = time.monotonic()
    while True:
        try:
            if policy.timeout_s is None:
                return await operation()
            remaining = max(0.001, policy.timeout_s - (time.monotonic() - started))
            return await asyncio.wait_for(operation(), remaining)
        except Exception as error:
            waited = time.monotonic() - started
            if isinstance(error, asyncio.TimeoutError) and policy.timeout_s is not None and waited >= policy.timeout_s:
                raise RetryTimeout(what, waited, backoff.attempts + 1, error) from error  # cut at the deadline
            if not retriable(error):
                raise
            delay = backoff.next_delay()
            if policy.max_attempts is not None and backoff.attempts >= policy.max_attempts:
                raise RetryTimeout(what, waited, backoff.attempts, error) from error
            if policy.timeout_s is not None:
                remaining = policy.timeout_s - waited
                if remaining <= 0:
                    raise RetryTimeout(what, waited, backoff.attempts, error) from error
                delay = min(delay, remaining)
            if log is not None:
                log.warning("waiting for %s: %s: %s; retrying in %.1fs", what, type(error).__name__,
                            str(error)[:200] or "no detail", delay)
            if on_retry is not None:
                on_retry(error, delay)
            await asyncio.sleep(delay)
