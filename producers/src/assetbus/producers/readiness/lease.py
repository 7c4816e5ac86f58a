"""A run's lease around its handler: claim it (waiting while another holder's lease is live), then
renew it every third of the lease while the handler runs, and say when a renewal was refused.

Used by `run_once` only; the ledgers (`assetbus.producers.readiness.ledger`) hold the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from assetbus.producers.kafka.periodic import in_background
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.readiness.ledger import Claim, ClaimState, RunLedger

log = logging.getLogger("assetbus.readiness")

RENEWALS_PER_LEASE = 3
"""A holder renews its lease this many times per lease: two renewals may fail before it lapses."""


async def claim_when_free(ledger: RunLedger, run_id: str, consumer: str, *, first_wait_s: float = 0.2) -> Claim:
    """Claim the run; while another holder's lease is live (`HELD`), claim again with back-off, from
    `first_wait_s` up to a third of the lease, until that holder finishes (`FINISHED`) or its lease
    expires (`CLAIMED`). So two subscribers never run one run's handler at once, and a run whose
    holder died is taken over within a lease."""
    claim = await ledger.claim(run_id, consumer)
    if claim.state is not ClaimState.HELD:
        return claim
    log.info("run %s is held by another subscriber; waiting until it finishes or its lease expires", run_id)
    backoff = RetryPolicy(initial_s=first_wait_s,
                          max_s=max(first_wait_s, ledger.lease_s / RENEWALS_PER_LEASE)).backoff()
    while claim.state is ClaimState.HELD:
        await backoff.sleep()
        claim = await ledger.claim(run_id, consumer)
    return claim


@contextlib.asynccontextmanager
async def renewing(ledger: RunLedger, run_id: str, fence: int, on_lost: Callable[[], None]) -> AsyncIterator[None]:
    """Renew the lease of `fence` in the background while the body runs. A refused renewal (another claim
    took the run after the lease expired) calls `on_lost` once and stops renewing; a renewal that fails
    (the ledger unreachable past its retry policy) is logged and tried again at the next turn."""

    async def renew() -> None:
        while True:
            await asyncio.sleep(ledger.lease_s / RENEWALS_PER_LEASE)
            try:
                renewed = await ledger.renew(run_id, fence)
            except Exception as error:  # the next turn tries again; the lease may lapse meanwhile
                log.warning("could not renew the lease of run %s: %s: %s", run_id, type(error).__name__, error)
                continue
            if not renewed:
                on_lost()
                return

    async with in_background(renew(), name=f"assetbus-lease-{run_id}"):
        yield
