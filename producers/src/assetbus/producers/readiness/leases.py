"""A subscriber's side of the run leases: claiming a run another holder has (`claim_when_free`) and renewing
the leases of the handlers that run (`Leases`). The rules and why the API holds them: docs/consumer-dags.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from assetbus.producers.kafka.periodic import cancel_and_wait, every
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.readiness.ledger import Claim, ClaimState, RunLedger

log = logging.getLogger("assetbus.readiness")

RENEWALS_PER_LEASE = 3
"""A holder renews its lease this many times per lease: two renewals may fail before it lapses."""


async def claim_when_free(ledger: RunLedger, run_id: str, consumer: str, claim: Claim) -> Claim:
    """After a first `claim` of the run: while another holder's lease is live (`HELD`), claim again with back-off,
    from 0.2 s up to a third of the lease, until that holder finishes (`FINISHED`) or its lease expires
    (`CLAIMED`). So two subscribers never run one run's handler at once, and a run whose holder died is taken over
    within a lease."""
    if claim.state is not ClaimState.HELD:
        return claim
    log.info("run %s is held by another subscriber; waiting until it finishes or its lease expires", run_id)
    backoff = RetryPolicy(initial_s=0.2, max_s=max(0.2, ledger.lease_s / RENEWALS_PER_LEASE)).backoff()
    while claim.state is ClaimState.HELD:
        await backoff.sleep()
        claim = await ledger.claim(run_id, consumer)
    return claim


class Leases:
    """The leases of one ledger's runs whose handlers are running, renewed every third of a lease by one task
    that runs while any is held: a handler costs a dict entry, not a task or a timer of its own.

    A renewal the ledger refuses (another claim took the run after the lease expired) calls that holding's
    `on_lost` once and ends its renewals; one that fails (the ledger unreachable past its retry policy) is logged
    and tried again a turn later. A holding is renewed within a turn of being taken, then every turn."""

    def __init__(self, ledger: RunLedger) -> None:
        self._ledger = ledger
        self._held: dict[tuple[str, int], Callable[[], None]] = {}
        self._task: asyncio.Task[None] | None = None

    def hold(self, run_id: str, fence: int, on_lost: Callable[[], None]) -> None:
        self._held[(run_id, fence)] = on_lost
        if self._task is None or self._task.done():  # the toolkit's periodic loop, ending at a turn with none held
            self._task = every(self._ledger.lease_s / RENEWALS_PER_LEASE, self._renew_held, what="leases", log=log,
                               while_=lambda: bool(self._held))

    def release(self, run_id: str, fence: int) -> None:
        self._held.pop((run_id, fence), None)

    async def close(self) -> None:
        """Stop renewing (the holdings stay registered: a handler still running keeps its entry)."""
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _renew_held(self) -> None:
        await asyncio.gather(*(self._renew(run_id, fence) for run_id, fence in list(self._held)))

    async def _renew(self, run_id: str, fence: int) -> None:
        try:
            renewed = await self._ledger.renew(run_id, fence)
        except Exception as error:  # the next turn tries again; the lease may lapse meanwhile
            log.warning("could not renew the lease of run %s: %s: %s", run_id, type(error).__name__, error)
            return
        if not renewed and (on_lost := self._held.pop((run_id, fence), None)) is not None:
            on_lost()
