"""Asset events → queue entries, skips and new consumer runs, in the caller's transaction.

Idempotent by (dag, event): an event already queued for a DAG, or recorded by the run it made ready on its
own, is a redelivery and does nothing. Target partitions are locked first (`storage.queue.lock_targets`), so
concurrent schedulers, or a scheduler and a replay, create each run once. Per batch, three statements whatever
its size (`storage.fanout`), planned in Python with the `DagRegistry`'s active definitions.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.errors import ConsumerError
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.payload import IncomingEvent, events_json, from_stored
from assetbus.consumers.scheduler.planner import DagIndex, PendingEntry, QueueEntry, RunPlan, Skip, TargetKey, plan_runs
from assetbus.consumers.storage.dags import dags_version, list_dags
from assetbus.consumers.storage.fanout import TargetState, lock_and_confirm, read_targets, write_fanout
from assetbus.consumers.storage.queue import NewQueueEntry, NewSkip, QueueRow, insert_skips, lock_targets
from assetbus.consumers.storage.runs import NewRun, RunRow, created_run

log = logging.getLogger("assetbus.scheduler")

ORIGIN_SCHEDULER = "scheduler"
ORIGIN_REPLAY = "replay"


class DagRegistry:
    """The active consumer DAGs as a DagIndex; `refresh()` costs one small query when nothing changed."""

    def __init__(self) -> None:
        self.index = DagIndex([])
        self.version: tuple[int, datetime | None] | None = None
        """The definitions' version loaded (`dags_version`), None before the first `refresh()`."""

    async def refresh(self, conn: AsyncConnection) -> bool:
        """Reload the definitions if a sync changed them since the last call. True if it reloaded."""
        version = await dags_version(conn)
        if version == self.version:
            return False
        dags: list[ConsumerDag] = []
        for row in await list_dags(conn, active_only=True):
            try:
                dags.append(ConsumerDag.from_definition(row.definition))
            except ValidationError as error:  # written by another version, or edited by hand
                log.error("consumer DAG %s has an unreadable definition and is ignored: %s", row.dag_id,
                          error.errors()[0]["msg"])
        self.index = DagIndex(dags)
        self.version = version
        log.info("consumer DAGs loaded: %s", ", ".join(sorted(self.index.by_id)) or "none")
        return True


@dataclass
class ApplyResult:
    runs: list[RunRow] = field(default_factory=list)
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
                         origin: str, *, locked: bool = False) -> QueueOutcome:
    """Queue entries that are new for their DAG and create the runs whose condition now holds: lock (unless the
    caller has `locked` the targets already), read what the targets hold, write (`storage.fanout`)."""
    outcome = QueueOutcome()
    if not entries:
        return outcome
    targets = {entry.target for entry in entries}
    if not locked:
        await lock_targets(conn, targets)
    state = await read_targets(conn, [(e.dag_id, e.event.event_id) for e in entries], targets)
    known = state.known
    fresh = [e for e in entries if (e.dag_id, e.event.event_id) not in known] if known else entries
    if not fresh:
        return outcome
    queued: dict[TargetKey, list[PendingEntry]] = {}
    for entry in fresh:
        target = entry.target
        if target not in queued:
            queued[target] = [pending(row) for row in state.pending.get(target, [])]
        queued[target].append(PendingEntry(None, entry))
    plans: list[RunPlan] = []
    for target in sorted(queued, key=lambda t: _arrival(queued[t])):
        dag = dags.get(target[0])
        planned = plan_runs(dag, target[1], queued[target]) if dag is not None else []
        plans.extend(planned)
        outcome.planned[target] = len(planned)
        if planned:
            consumed = {id(p) for plan in planned for p in plan.entries}
            outcome.waiting[target] = [p for p in queued[target] if id(p) not in consumed]
        else:
            outcome.waiting[target] = queued[target]
    runs, run_of = _new_runs(plans, state, origin)
    recorded = {pair for pair, run_id in run_of.items() if run_id is None}  # their runs hold them: no queue row
    written = await write_fanout(
        conn, runs, [_new_entry(e, run_of.get(pair)) for e in fresh
                     if (pair := (e.dag_id, e.event.event_id)) not in recorded],
        [(p.row_id, run.run_id) for plan, run in zip(plans, runs, strict=True) for p in plan.entries
         if p.row_id is not None])
    if len(written.run_ids) != len(runs):  # only possible if the target locks were bypassed
        raise ConsumerError("a consumer run for the same (dag, partition, generation) exists already")
    outcome.runs = [created_run(run, written.run_ids[run.run_id], written.created_at) for run in runs]
    return outcome


@dataclass(slots=True)
class Routed:
    """A batch's events routed with one DagIndex: the events some DAG waits on, their entries and skips."""

    index: DagIndex
    wanted: list[IncomingEvent]
    entries: list[QueueEntry]
    skips: list[Skip]


async def route_batch(index: DagIndex, incoming: Sequence[IncomingEvent], chunk: int = 256) -> Routed:
    """Route the events some DAG waits on, in event id order, yielding to the event loop every `chunk` events
    (the shell's prepare stage)."""
    wanted = [e for e in incoming if e.event.asset_name in index.by_asset]
    ordered = sorted((e.event for e in wanted), key=lambda e: e.event_id)
    routed = Routed(index, wanted, [], [])
    for start in range(0, len(ordered), chunk):
        await asyncio.sleep(0)
        entries, skips = index.route(ordered[start:start + chunk])
        routed.entries += entries
        routed.skips += skips
    return routed


async def apply_events(conn: AsyncConnection, registry: DagRegistry, incoming: Sequence[IncomingEvent],
                       routed: Routed | None = None) -> ApplyResult:
    """Route a batch of events to the DAGs waiting on them (`routed`: kept if routed with the registry's current
    index), queue them, create the runs that are due. Only events stored in this database are applied: an id
    is only an idempotency key if it names the same event (a topic shared with another database, or a
    restored one, would lie). Definitions changed since (seen with the locks) are reloaded, the batch routed again."""
    result = ApplyResult()
    while True:
        if routed is None or routed.index is not registry.index:
            routed = await route_batch(registry.index, incoming)
        confirmed, version = await lock_and_confirm(conn, {entry.target for entry in routed.entries},
                                                    [(e.event.event_id, e.command_id) for e in routed.wanted])
        if version == registry.version:
            break
        await registry.refresh(conn)
    index, wanted, entries, skips = routed.index, routed.wanted, routed.entries, routed.skips
    if len(confirmed) < len(wanted):
        foreign = [e.event.event_id for e in wanted if e.event.event_id not in confirmed]
        result.foreign = len(foreign)
        log.warning("skipping %d asset event(s) not stored in this database (ids %s%s): is the topic prefix "
                    "shared with another database?", len(foreign), foreign[:5], "…" if len(foreign) > 5 else "")
        entries = [e for e in entries if e.event.event_id in confirmed]
        skips = [s for s in skips if s.event.event_id in confirmed]
    if skips:
        result.skipped = await insert_skips(conn, [
            NewSkip(s.dag_id, s.event.event_id, s.event.asset_name, s.event.partition_key, s.reason.value,
                    s.detail[:1000]) for s in skips])
        for skip in skips:
            log.info("dag %s skips event %d of %s: %s (%s)", skip.dag_id, skip.event.event_id, skip.event.asset_name,
                     skip.reason.value, skip.detail)
    result.runs = (await queue_and_plan(conn, index.by_id, entries, ORIGIN_SCHEDULER, locked=True)).runs
    return result


def _new_runs(plans: Sequence[RunPlan], state: TargetState,
              origin: str) -> tuple[list[NewRun], dict[tuple[str, int], str | None]]:
    """Runs for plans (generations continue per target). Also: (dag, event id) → the run id its new queue
    entry carries, or None when the entry is not stored (a run ready at that one new event records it)."""
    runs: list[NewRun] = []
    run_of: dict[tuple[str, int], str | None] = {}
    generations = state.generations
    for plan, run_id in zip(plans, new_run_ids(len(plans)), strict=True):
        target = (plan.dag_id, plan.target_key)
        generation = generations[target] = generations.get(target, 0) + 1
        events = plan.events
        only = plan.entries[0] if len(plan.entries) == 1 and plan.entries[0].row_id is None else None
        runs.append(NewRun(run_id, plan.dag_id, plan.target_key, plan.target_date, generation,
                           [e.payload for e in events], origin, events_json(events),
                           None if only is None else only.entry.event.event_id))
        if only is not None:
            run_of[(plan.dag_id, only.entry.event.event_id)] = None
            continue
        for p in plan.entries:
            run_of[(plan.dag_id, p.entry.event.event_id)] = run_id
    return runs, run_of


def new_run_ids(n: int) -> list[str]:
    """n random version-4 UUIDs in their canonical text form: the same ids as `str(uuid.uuid4())`, at about half
    its cost per id (one `os.urandom` call per batch, no UUID object per run)."""
    raw = bytearray(os.urandom(16 * n))
    for i in range(6, 16 * n, 16):
        raw[i] = raw[i] & 0x0F | 0x40  # version 4
        raw[i + 2] = raw[i + 2] & 0x3F | 0x80  # RFC 4122 variant
    h = raw.hex()
    return [f"{h[j:j + 8]}-{h[j + 8:j + 12]}-{h[j + 12:j + 16]}-{h[j + 16:j + 20]}-{h[j + 20:j + 32]}"
            for j in range(0, 32 * n, 32)]


def _new_entry(entry: QueueEntry, run_id: str | None) -> NewQueueEntry:
    return NewQueueEntry(entry.dag_id, entry.event.event_id, entry.asset_name, entry.target_key, entry.target_date,
                         entry.slot, entry.event.json, run_id)


def _arrival(entries: Sequence[PendingEntry]) -> tuple[int, int]:
    """Plan targets in the order their oldest entry arrived (signals then follow arrival order)."""
    first = entries[0]
    return (0, first.row_id) if first.row_id is not None else (1, first.entry.event.event_id)
