"""The in-process ledger keeps the leases and fences the database keeps: one holder at a time, a new fence
after expiry, and the old holder's renewal and outcome refused."""

from __future__ import annotations

from assetbus.producers.readiness import Claim, ClaimState, FinishResult, MemoryLedger, RunStatus


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_second_claim_of_a_live_lease_is_refused() -> None:
    ledger = MemoryLedger(lease_s=10, clock=Clock())
    assert await ledger.claim("r1", "a") == Claim(ClaimState.CLAIMED, 1)
    assert await ledger.claim("r1", "b") == Claim(ClaimState.HELD)
    assert ledger.outcomes == {"r1": RunStatus.RUNNING}


async def test_a_claim_after_expiry_gets_a_new_fence_and_the_old_holder_is_refused() -> None:
    clock = Clock()
    ledger = MemoryLedger(lease_s=10, clock=clock)
    first = await ledger.claim("r1", "a")
    clock.now += 10
    second = await ledger.claim("r1", "b")
    assert (first.fence, second) == (1, Claim(ClaimState.CLAIMED, 2))
    assert await ledger.renew("r1", first.fence) is False
    assert await ledger.finish("r1", first.fence, RunStatus.SUCCESS) is FinishResult.STALE_FENCE
    assert ledger.outcomes == {"r1": RunStatus.RUNNING}
    assert await ledger.finish("r1", second.fence, RunStatus.FAILED, "boom") is FinishResult.RECORDED
    assert ledger.outcomes == {"r1": RunStatus.FAILED}
    assert await ledger.claim("r1", "c") == Claim(ClaimState.FINISHED)


async def test_a_renewal_keeps_the_run_and_a_lapsed_lease_nobody_took_stays_the_holders() -> None:
    clock = Clock()
    ledger = MemoryLedger(lease_s=10, clock=clock)
    held = await ledger.claim("r1", "a")
    clock.now += 9
    assert await ledger.renew("r1", held.fence) is True
    clock.now += 9  # 18 s after the claim, 9 after the renewal
    assert await ledger.claim("r1", "b") == Claim(ClaimState.HELD)
    clock.now += 5  # lapsed, but no other claim has a fence: the holder's renewal and outcome stand
    assert await ledger.renew("r1", held.fence) is True
    assert await ledger.finish("r1", held.fence, RunStatus.SUCCESS) is FinishResult.RECORDED


async def test_a_finished_run_is_never_claimed_again_and_its_outcome_not_reported_twice() -> None:
    ledger = MemoryLedger(lease_s=10, clock=Clock())
    held = await ledger.claim("r1", "a")
    assert await ledger.finish("r1", held.fence, RunStatus.SUCCESS) is FinishResult.RECORDED
    assert await ledger.finish("r1", held.fence, RunStatus.FAILED) is FinishResult.STALE_FENCE
    assert await ledger.renew("r1", held.fence) is False
    assert await ledger.claim("r1", "a") == Claim(ClaimState.FINISHED)
    assert ledger.outcomes == {"r1": RunStatus.SUCCESS}
