"""Asset events → queue entries, skips and new consumer runs, in the caller's transaction.

Idempotent by (dag, event): an event already queued for a DAG (pending or consumed by a run) is
a redelivery and does nothing. Target partitions are locked (advisory, transaction-scoped) first,
so concurrent schedulers, or a scheduler and a replay, see each other's entries and create each
run once. Per batch: lock, find redeliveries, load the older pending entries of the touched
targets, plan, then write runs and entries (new entries already carry their run id).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.decode import IncomingEvent
from assetbus.consumers.scheduler.payload import events_json, from_stored
from assetbus.consumers.scheduler.planner import DagIndex, PendingEntry, QueueEntry, RunPlan, Skip, TargetKey, plan_runs
from assetbus.consumers.storage.history import confirm_events
from assetbus.consumers.storage.queue import (
    NewQueueEntry,
    NewSkip,
    QueueRow,
    consume_entries,
    insert_queue_entries,
    insert_skips,
    lock_targets,
    pending_entries,
    queued_events,
)
from assetbus.consumers.storage.runs import NewRun, RunRow, insert_runs, latest_generations

log = logging.getLogger("assetbus.scheduler")

ORIGIN_SCHEDULER = "scheduler"
ORIGIN_REPLAY = "replay"


@dataclass
class ApplyResult:
    runs: list[RunRow] = field(default_factory=list)
    routed: int = 0
    skipped: int = 0
    foreign: int = 0
    """Events on the topic that this database does not hold (skipped)."""


@dataclass
class QueueOutcome:
    runs: list[RunRow] = field(default_factory=list)
    planned: dict[TargetKey, int] = field(default_factory=dict)
    """Runs planned per target touched by new entries."""
    waiting: dict[TargetKey, list[PendingEntry]] = field(default_factory=dict)
    """What stays pending per touched target (for progress reports)."""


def pending(row: QueueRow) -> PendingEntry:
    return PendingEntry(row.id, QueueEntry(row.dag_id, row.target_key, row.target_date, row.asset_name, row.slot,
                                           from_stored(row.event)))


async def queue_and_plan(conn: AsyncConnection, dags: Mapping[str, ConsumerDag], entries: Sequence[QueueEntry],
                         origin: str) -> QueueOutcome:
    """Queue entries that are new for their DAG and create the runs whose condition now holds."""
    outcome = QueueOutcome()
    if not entries:
        return outcome
    await lock_targets(conn, {entry.target for entry in entries})
    known = await queued_events(conn, [(e.dag_id, e.event.event_id) for e in entries])
    fresh = [e for e in entries if (e.dag_id, e.event.event_id) not in known]
    if not fresh:
        return outcome
    touched = sorted({e.target for e in fresh}, key=lambda t: (t[0], t[1] or ""))
    older = await pending_entries(conn, touched)
    queued: dict[TargetKey, list[PendingEntry]] = {t: [pending(row) for row in older[t]] for t in touched}
    for entry in fresh:
        queued[entry.target].append(PendingEntry(None, entry))
    plans: list[RunPlan] = []
    for target in sorted(touched, key=lambda t: _arrival(queued[t])):
        dag = dags.get(target[0])
        planned = plan_runs(dag, target[1], queued[target]) if dag is not None else []
        plans.extend(planned)
        outcome.planned[target] = len(planned)
        consumed = {id(p) for plan in planned for p in plan.entries}
        outcome.waiting[target] = [p for p in queued[target] if id(p) not in consumed]
    outcome.runs, run_of = await _create_runs(conn, plans, origin)
    await insert_queue_entries(conn, [_new_entry(e, run_of.get((e.dag_id, e.event.event_id))) for e in fresh])
    await consume_entries(conn, [(p.row_id, run.run_id) for plan, run in zip(plans, outcome.runs, strict=True)
                                 for p in plan.entries if p.row_id is not None])
    return outcome


async def apply_events(conn: AsyncConnection, index: DagIndex, incoming: Sequence[IncomingEvent]) -> ApplyResult:
    """Route a batch of events to the DAGs waiting on them, queue them, create the runs that are due.

    Only events stored in this database are applied: an id is only an idempotency key if it
    names the same event (a topic shared with another database, or a restored one, would lie).
    """
    result = ApplyResult()
    wanted = [e for e in incoming if e.event.asset_name in index.by_asset]
    confirmed = await confirm_events(conn, [(e.event.event_id, e.command_id) for e in wanted])
    foreign = [e.event.event_id for e in wanted if e.event.event_id not in confirmed]
    if foreign:
        result.foreign = len(foreign)
        log.warning("skipping %d asset event(s) not stored in this database (ids %s%s): is the topic prefix "
                    "shared with another database?", len(foreign), foreign[:5], "…" if len(foreign) > 5 else "")
    events = sorted((e.event for e in wanted if e.event.event_id in confirmed), key=lambda e: e.event_id)
    entries, skips = index.route(events)
    if skips:
        result.skipped = await insert_skips(conn, [_new_skip(s) for s in skips])
        for skip in skips:
            log.info("dag %s skips event %d of %s: %s (%s)", skip.dag_id, skip.event.event_id, skip.event.asset_name,
                     skip.reason.value, skip.detail)
    result.routed = len(entries)
    result.runs = (await queue_and_plan(conn, index.by_id, entries, ORIGIN_SCHEDULER)).runs
    return result


async def _create_runs(conn: AsyncConnection, plans: Sequence[RunPlan],
                       origin: str) -> tuple[list[RunRow], dict[tuple[str, int], str]]:
    """Insert runs for plans (generations continue per target). Also: (dag, event id) → run id."""
    if not plans:
        return [], {}
    generations = await latest_generations(conn, {(p.dag_id, p.target_key) for p in plans})
    runs: list[NewRun] = []
    run_of: dict[tuple[str, int], str] = {}
    for plan in plans:
        target = (plan.dag_id, plan.target_key)
        generations[target] += 1
        run_id = str(uuid.uuid4())
        events = plan.events
        runs.append(NewRun(run_id, plan.dag_id, plan.target_key, plan.target_date, generations[target],
                           [e.payload for e in events], origin, events_json(events)))
        run_of.update(((plan.dag_id, p.entry.event.event_id), run_id) for p in plan.entries)
    created = await insert_runs(conn, runs)
    if len(created) != len(runs):  # only possible if the target locks were bypassed
        raise RuntimeError("a consumer run for the same (dag, partition, generation) exists already")
    by_id = {run.run_id: run for run in created}
    return [by_id[run.run_id] for run in runs], run_of


def _new_entry(entry: QueueEntry, run_id: str | None) -> NewQueueEntry:
    return NewQueueEntry(entry.dag_id, entry.event.event_id, entry.asset_name, entry.target_key, entry.target_date,
                         entry.slot, entry.event.json, run_id)


def _new_skip(skip: Skip) -> NewSkip:
    return NewSkip(skip.dag_id, skip.event.event_id, skip.event.asset_name, skip.event.partition_key,
                   skip.reason.value, skip.detail[:1000])


def _arrival(entries: Sequence[PendingEntry]) -> tuple[int, int]:
    """Plan targets in the order their oldest entry arrived (signals then follow arrival order)."""
    first = entries[0]
    return (0, first.row_id) if first.row_id is not None else (1, first.entry.event.event_id)
