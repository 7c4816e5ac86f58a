"""Replay: re-derive readiness from stored events for one DAG and a range, creating only missing runs.

Pass 1 routes the DAG's assets' stored events (page by page, in id order) into (target, event id) rows of a
temporary table; pass 2 reads them back a target at a time, leaves targets that have a run alone, and queues
and plans the others exactly as the scheduler would (or reports them incomplete). Memory is bounded by the page
and chunk sizes (and the largest target's history). Each chunk of targets is one transaction under the
scheduler's advisory target locks, so a scheduler and a replay never create the same run twice
(docs/consumer-dags.md, "Replay").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler.apply import ORIGIN_REPLAY, pending, queue_and_plan
from assetbus.consumers.scheduler.conditions import Progress
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.payload import UpstreamEvent, upstream_event
from assetbus.consumers.scheduler.planner import DagIndex, PendingEntry, QueueEntry, plan_runs, progress
from assetbus.consumers.storage.queue import lock_targets, pending_entries
from assetbus.consumers.storage.replay_targets import (
    START,
    HistoricEvent,
    RoutedTable,
    count_stored_events,
    routed_events,
    stored_events,
)
from assetbus.consumers.storage.runs import RunRow, targets_with_runs

MARGIN = timedelta(days=35)
"""Upstream events are read this far beyond a date range, so roll-up windows at its edges are whole."""

ProgressCallback = Callable[[str, int, int], None]
"""(phase, done, total): phase is `scan` (events read) or `create` (targets written)."""


@dataclass(frozen=True)
class ReplayRange:
    """Which target partitions to replay: by target date in [since, until), by key, or all."""

    since: datetime | None = None
    until: datetime | None = None
    partitions: frozenset[str] | None = None

    def selects(self, key: str | None, target_date: datetime | None, entries: Sequence[QueueEntry]) -> bool:
        if self.partitions is not None and key not in self.partitions:
            return False
        if self.since is None and self.until is None:
            return True
        dates = [target_date] if target_date is not None else [
            e.event.partition_date for e in entries if e.event.partition_date is not None]
        return any((self.since is None or d >= self.since) and (self.until is None or d < self.until) for d in dates)


@dataclass(frozen=True, slots=True)
class TargetOutcome:
    target_key: str | None
    target_date: datetime | None
    events: int
    action: str
    """`created`, `would create`, `exists` (has a run: left alone) or `incomplete` (condition does not hold)."""
    runs: int = 0
    missing: tuple[Progress, ...] = ()


SAMPLE = 50
"""Target partitions a report lists per action (the others are counted only)."""


@dataclass
class ReplayReport:
    dag_id: str
    dry_run: bool
    scanned: int = 0
    skipped: int = 0
    runs: int = 0
    """Runs created (on a dry run: that would be created)."""
    published: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    targets: list[TargetOutcome] = field(default_factory=list)
    """The first `sample` target partitions of each action, in target order."""
    left_out: int = 0
    sample: int = SAMPLE

    def count(self, action: str) -> int:
        return self.counts.get(action, 0)

    def add(self, outcome: TargetOutcome) -> None:
        seen = self.counts[outcome.action] = self.count(outcome.action) + 1
        if seen <= self.sample:
            self.targets.append(outcome)
        else:
            self.left_out += 1


class RunPublisher(Protocol):
    async def publish(self, runs: Sequence[RunRow]) -> int: ...


async def replay(engine: AsyncEngine, dag: ConsumerDag, selection: ReplayRange, *, dry_run: bool = False,
                 publisher: RunPublisher | None = None, on_progress: ProgressCallback | None = None,
                 page: int = 2000, chunk: int = 200, sample: int = SAMPLE) -> ReplayReport:
    report = ReplayReport(dag.dag_id, dry_run, sample=sample)
    progress: ProgressCallback = on_progress or (lambda phase, done, total: None)
    async with routed_events(engine) as table:
        await _scan(table, dag, selection, report, page, progress)
        total = await table.index()
        done = 0
        selected: dict[str | None, list[QueueEntry]] = {}
        async for key, entries in _targets(table, dag, page):
            done += 1
            if selection.selects(key, _target_date(entries), entries):
                selected[key] = entries
            if len(selected) >= chunk:
                await _chunk(engine, dag, selected, report, publisher)
                selected = {}
                progress("create", done, total)
        await _chunk(engine, dag, selected, report, publisher)
        progress("create", done, total)
    return report


async def _scan(table: RoutedTable, dag: ConsumerDag, selection: ReplayRange, report: ReplayReport, page: int,
                on_progress: ProgressCallback) -> None:
    """Pass 1: route the stored events in id order, page by page, into the replay's table."""
    since = selection.since - MARGIN if selection.since is not None else None
    until = selection.until + MARGIN if selection.until is not None else None
    index = DagIndex([dag])
    wanted = selection.partitions
    total = await count_stored_events(table.conn, dag.assets, since=since, until=until)
    after = 0
    while True:
        rows = await stored_events(table.conn, dag.assets, after_id=after, limit=page, since=since, until=until)
        if not rows:
            await table.add([])
            break
        after = rows[-1].id
        entries, skips = index.route(_upstream(row) for row in rows)
        report.scanned += len(rows)
        report.skipped += len(skips)
        await table.add([(e.target_key, e.slot, e.event.event_id) for e in entries
                         if wanted is None or e.target_key in wanted])
        on_progress("scan", report.scanned, max(total, report.scanned))


async def _targets(table: RoutedTable, dag: ConsumerDag, page: int) -> AsyncIterator[tuple[str | None,
                                                                                       list[QueueEntry]]]:
    """Pass 2: each target partition with all of its routed events, in id order, one target after the other.

    Each event is routed again rather than rebuilt from the table's columns: the mapping's target date keeps
    its zone (`Europe/Berlin`, not the `+00:00` that a `timestamptz` column gives back)."""
    index = DagIndex([dag])
    after = START
    key: str | None = None
    entries: list[QueueEntry] = []
    while True:
        rows, after = await table.page(after, page)
        for row in rows:
            if entries and row.target_key != key:
                yield key, entries
                entries = []
            key = row.target_key
            (entry,), _ = index.route([_upstream(row.event)])
            assert (entry.target_key, entry.slot) == (key, row.slot), "a stored event routed differently twice"
            entries.append(entry)
        if len(rows) < page:
            break
    if entries:
        yield key, entries


async def _chunk(engine: AsyncEngine, dag: ConsumerDag, selected: dict[str | None, list[QueueEntry]],
                 report: ReplayReport, publisher: RunPublisher | None) -> None:
    """Plan (a dry run) or write one chunk of selected targets; publish the runs it created."""
    if not selected:
        return
    if report.dry_run:
        async with engine.connect() as conn:
            taken = await targets_with_runs(conn, dag.dag_id, selected)
        for key, entries in selected.items():
            if key in taken:
                report.add(TargetOutcome(key, _target_date(entries), len(entries), "exists"))
                continue
            queued = [PendingEntry(None, entry) for entry in entries]
            plans = plan_runs(dag, key, queued)
            report.runs += len(plans)
            report.add(TargetOutcome(key, plans[0].target_date, len(entries), "would create", len(plans)) if plans
                       else _incomplete(dag, key, queued))
        return
    runs = await _write(engine, dag, selected, report)
    report.runs += len(runs)
    if publisher is not None and runs:
        report.published += await publisher.publish(runs)


async def _write(engine: AsyncEngine, dag: ConsumerDag, selected: dict[str | None, list[QueueEntry]],
                 report: ReplayReport) -> list[RunRow]:
    """One transaction: lock the targets, leave those with a run alone, queue the others' history and plan."""
    keys = list(selected)
    async with engine.begin() as conn:
        await lock_targets(conn, [(dag.dag_id, key) for key in keys])
        taken = await targets_with_runs(conn, dag.dag_id, keys)  # existing runs, or a scheduler was quicker
        fresh = [key for key in keys if key not in taken]
        outcome = await queue_and_plan(conn, {dag.dag_id: dag}, [e for key in fresh for e in selected[key]],
                                       ORIGIN_REPLAY)
        untouched = [(dag.dag_id, key) for key in fresh if (dag.dag_id, key) not in outcome.waiting]
        queued = await pending_entries(conn, untouched)  # all of their history was queued before
    for key in keys:
        entries = selected[key]
        target = (dag.dag_id, key)
        if key in taken:
            report.add(TargetOutcome(key, _target_date(entries), len(entries), "exists"))
        elif outcome.planned.get(target):
            report.add(TargetOutcome(key, _target_date(entries), len(entries), "created", outcome.planned[target]))
        else:
            waiting = outcome.waiting.get(target) or [pending(row) for row in queued.get(target, [])]
            report.add(_incomplete(dag, key, waiting))
    return outcome.runs


def _incomplete(dag: ConsumerDag, key: str | None, queued: Sequence[PendingEntry]) -> TargetOutcome:
    missing = tuple(p for p in progress(dag, key, queued) if not p.complete)
    return TargetOutcome(key, _target_date([p.entry for p in queued]), len(queued), "incomplete", 0, missing)


def _target_date(entries: Sequence[QueueEntry]) -> datetime | None:
    return next((e.target_date for e in entries if e.target_date is not None), None)


def _upstream(row: HistoricEvent) -> UpstreamEvent:
    source = {"kind": row.source_kind, "dag_id": row.dag_id, "run_id": row.run_id, "task_id": row.task_id,
              "map_index": row.map_index, "try_number": row.try_number}
    return upstream_event(row.id, row.asset_name, row.partition_key, row.partition_date, source, row.created_at)
