"""The database ledger waits out a database outage with the shared retry policy, and nothing else."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from assetbus.consumers.readiness import ledger as ledger_module
from assetbus.consumers.readiness.ledger import DatabaseLedger
from assetbus.producers.readiness import Claim, ClaimState


class FlakyEngine:
    """An engine whose first `failures` connections are refused (as a restarting PostgreSQL would)."""

    def __init__(self, failures: int, error: BaseException | None = None) -> None:
        self.failures = failures
        self.error = error or ConnectionRefusedError("connection refused")
        self.attempts = 0

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[object]:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.error
        yield object()

    async def dispose(self) -> None:
        return None


async def claimed(conn: object, run_id: str, consumer: str, lease_s: float) -> None:
    return None  # what the database answers for an unknown run


async def test_a_claim_is_retried_until_the_database_answers(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(ledger_module, "claim_run", claimed)
    engine = FlakyEngine(failures=3)
    ledger = DatabaseLedger(engine=engine, backoff_initial_s=0.001, backoff_max_s=0.002)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="assetbus.readiness"):
        assert await ledger.claim("run-1", "c") == Claim(ClaimState.UNKNOWN)
    assert engine.attempts == 4
    waits = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting for the database")]
    assert len(waits) == 3, waits


async def test_a_fault_that_is_not_transient_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_module, "claim_run", claimed)
    engine = FlakyEngine(failures=5, error=ValueError("a fact about the data"))
    ledger = DatabaseLedger(engine=engine, backoff_initial_s=0.001, backoff_max_s=0.002)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a fact about the data"):
        await ledger.claim("run-1", "c")
    assert engine.attempts == 1
