"""The readiness subscriber: one consumer DAG's signals, typed, each run handled once (claimed in a run ledger,
handled, its outcome recorded, then its offset committed). The guide and a runnable example:
docs/consumer-dags.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from assetbus.producers.kafka.connection import KafkaConnection, as_connection
from assetbus.producers.kafka.offsets import OffsetMetrics, Tallies
from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.producers.kafka.types import Lifecycle
from assetbus.producers.readiness.leases import Leases, claim_when_free
from assetbus.producers.readiness.ledger import ClaimState, FinishResult, LedgerRefused, RunLedger, RunStatus
from assetbus.producers.tracing import context_of, tracer
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.schemas.codecs import decode_signal

log = logging.getLogger("assetbus.readiness")

Handler = Callable[[ReadinessSignal], Awaitable[None]]


class Skipped(str, Enum):
    """Why a signal's handler did not run."""

    DUPLICATE = "duplicate"
    """The run finished already (or the ledger does not know it)."""
    UNREADABLE = "unreadable"
    """Not a readiness signal of this DAG."""
    LEASE_LOST = "lease_lost"
    """The handler ran, but its lease expired and another claim took the run: its outcome was refused."""


@dataclass
class SubscriberStats:
    received: int = 0
    processed: int = 0
    failed: int = 0
    duplicates: int = 0
    unreadable: int = 0
    lease_lost: int = 0


_TALLIES: dict[RunStatus | Skipped, str] = {
    RunStatus.SUCCESS: "processed", RunStatus.FAILED: "failed", Skipped.DUPLICATE: "duplicates",
    Skipped.UNREADABLE: "unreadable", Skipped.LEASE_LOST: "lease_lost"}
"""The `SubscriberStats` field each outcome of `handle` counts in."""


class SubscriberEvents:
    """What a subscriber reports, per DAG: no-ops here; a metrics adapter (the server's Prometheus
    `SubscriberMetrics`, say) overrides them."""

    def signal(self, dag_id: str, outcome: str) -> None:
        """A signal taken from the topic: success, failed, duplicate or unreadable."""

    def handled(self, dag_id: str, seconds: float) -> None:
        """The handler's duration for one run."""

    def ready_after(self, dag_id: str, seconds: float) -> None:
        """From the run's creation by the scheduler to its handler starting here."""

    def lease_lost(self, dag_id: str) -> None:
        """A handler lost its run's lease while it ran (its outcome is refused; another claim holds the run)."""

    def offset_metrics(self, dag_id: str) -> OffsetMetrics:
        """What the consume shell counts for this DAG (rebalances, failed commits, lag): plain tallies here."""
        return Tallies()


def check_signal(value: bytes | None, dag_id: str, topic: str) -> ReadinessSignal | None:
    """The signal a record holds, or None (logged) if it is unreadable or belongs to another DAG."""
    try:
        signal = decode_signal(value)
    except ValidationError as error:
        log.warning("skipping an unreadable readiness signal on %s: %s", topic, error.errors()[0]["msg"])
        return None
    if signal.dag_id != dag_id:
        log.warning("skipping a signal for dag %s on the topic of %s", signal.dag_id, dag_id)
        return None
    return signal


async def run_once(ledger: RunLedger, signal: ReadinessSignal, handler: Handler, consumer: str,
                   events: SubscriberEvents | None = None, context: Context | None = None, *,
                   leases: Leases | None = None) -> RunStatus | Skipped:
    """Claim the signal's run, run the handler, record its outcome. `Skipped.DUPLICATE` if the run finished.

    The plain subscriber and the FastStream integration both call it. A lease lost while the handler ran is logged
    and reported (`lease_lost`); the ledger refuses the outcome: `Skipped.LEASE_LOST`. A handler's exception is
    recorded as `failed` (and not raised); a ledger's error is raised (the signal must come again). With `context`
    (the trace context the signal's record carried) the handler runs in an `assetbus handle` span, its child.
    `leases`: the renewals shared by a subscriber's calls (default: this call's own)."""
    claim = await ledger.claim(signal.run_id, consumer)
    if claim.state is ClaimState.HELD:
        claim = await claim_when_free(ledger, signal.run_id, consumer, claim)
    if not claim.claimed:
        log.info("run %s of %s has finished already (or is unknown to the ledger); skipping the signal",
                 signal.run_id, signal.dag_id)
        return Skipped.DUPLICATE
    if events is not None:
        events.ready_after(signal.dag_id, max(0.0, time.time() - signal.created_at.timestamp()))
    lost: list[bool] = []

    def lease_lost() -> None:
        log.warning("run %s of %s: the lease (fence %d) was lost while its handler ran: another claim holds the "
                    "run now; this outcome will be refused", signal.run_id, signal.dag_id, claim.fence)
        lost.append(True)
        if events is not None:
            events.lease_lost(signal.dag_id)

    status, detail = RunStatus.SUCCESS, None
    held = leases or Leases(ledger)
    held.hold(signal.run_id, claim.fence, lease_lost)
    started = time.perf_counter()
    try:
        if context is None:
            await handler(signal)
        else:
            with tracer.start_as_current_span("assetbus handle", context, kind=SpanKind.CONSUMER,
                                              attributes={"assetbus.dag_id": signal.dag_id,
                                                          "assetbus.run_id": signal.run_id}):
                await handler(signal)
    except Exception as error:
        log.exception("handler failed for run %s of %s", signal.run_id, signal.dag_id)
        status, detail = RunStatus.FAILED, f"{type(error).__name__}: {error}"[:2000]
    finally:
        held.release(signal.run_id, claim.fence)
        if held is not leases:
            await held.close()
        if events is not None:
            events.handled(signal.dag_id, time.perf_counter() - started)
    if await ledger.finish(signal.run_id, claim.fence, status, detail) is FinishResult.STALE_FENCE:
        if not lost:
            lease_lost()
        return Skipped.LEASE_LOST
    return status


class ReadinessSubscriber(Lifecycle):
    """Subscribe to `<prefix>.readiness.<dag_id>` in a consumer group. Explicit lifecycle or `async with`."""

    def __init__(self, connection: KafkaConnection | str, dag_id: str, handler: Handler, *, group_id: str,
                 ledger: RunLedger, topics: Topics | None = None, consumer_name: str | None = None,
                 max_records: int = 100, metrics: SubscriberEvents | None = None,
                 settings: ConsumerSettings | None = None) -> None:
        self.topics = topics or Topics()
        self.dag_id = dag_id
        self.topic = self.topics.readiness(dag_id)
        self.group_id = group_id
        self.consumer_name = consumer_name or group_id
        self.stats = SubscriberStats()
        self.metrics = metrics or SubscriberEvents()
        self._handler = handler
        self._ledger = ledger
        self._leases = Leases(ledger)
        if settings is None:  # a service passes its own (`ConsumerGroupSettings.consumer_settings`)
            settings = ConsumerSettings(topics=(self.topic,), group_id=group_id, max_records=max_records,
                                        batch_timeout_ms=500, fetch_max_wait_ms=10)
        self.shell: ServiceShell[Sequence[Any]] = ServiceShell(
            as_connection(connection), settings, self._on_batch, stop_on=(LedgerRefused,),
            metrics=self.metrics.offset_metrics(dag_id), log=log,
            after_commit=lambda: self.shell.offsets.update_lag(), name=f"assetbus-readiness-{dag_id}")

    async def start(self) -> None:
        await self._ledger.start()
        try:
            await self.shell.start()
        except BaseException:
            await self._ledger.stop()
            raise

    async def stop(self) -> None:
        """Finish the signals in flight (their offsets are committed), leave the group, close the ledger."""
        try:
            await self.shell.stop()
        finally:
            await self._leases.close()
            await self._ledger.stop()

    async def wait_assigned(self, timeout_s: float = 30.0) -> None:
        """Wait until the group has given this subscriber its partitions (useful before emitting in tests)."""
        await self.shell.wait_assigned(timeout_s)

    async def run_forever(self) -> None:
        """For scripts: block while the subscriber runs (re-raises if its loop died)."""
        await self.shell.run_forever()

    async def _on_batch(self, records: Sequence[Any]) -> None:
        for record in records:
            await self.handle(record.value, record.headers)

    async def handle(self, value: bytes | None,
                     headers: Sequence[tuple[str, bytes]] | None = None) -> RunStatus | None:
        """Handle one record value (and its headers: a `traceparent` there is the handler span's parent).
        Returns the run's outcome, or None if it was skipped."""
        self.stats.received += 1
        signal = check_signal(value, self.dag_id, self.topic)
        outcome = Skipped.UNREADABLE if signal is None else await run_once(
            self._ledger, signal, self._handler, self.consumer_name, self.metrics, context_of(headers),
            leases=self._leases)
        tally = _TALLIES[outcome]
        setattr(self.stats, tally, getattr(self.stats, tally) + 1)
        self.metrics.signal(self.dag_id, outcome.value)
        return outcome if isinstance(outcome, RunStatus) else None
