"""Replay: re-derive readiness from stored events for one DAG and a range, creating only missing runs.

1. Scan the DAG's assets' stored events (page by page) and map them to target partitions.
2. Keep the targets in range that have no run at all (existing runs are never re-triggered).
3. For each, queue its whole history and plan runs exactly as the scheduler would (a coalescing
   DAG gets one run with every event; a one-run-per-event DAG one run per event); a target whose
   condition does not hold is reported as incomplete, with what it still lacks.

Writes happen per chunk of targets in one transaction each, under the same advisory target locks
as the scheduler, so a running scheduler and a replay never create the same run twice. A dry run
reads only. New runs are published (if a publisher is given) or left for the scheduler, which
publishes unpublished runs on its timer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.scheduler.apply import ORIGIN_REPLAY, pending, queue_and_plan
from assetbus.consumers.scheduler.conditions import Progress
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.payload import UpstreamEvent, upstream_event
from assetbus.consumers.scheduler.planner import DagIndex, PendingEntry, QueueEntry, plan_runs, progress
from assetbus.consumers.scheduler.publish import ReadinessPublisher
from assetbus.consumers.storage.history import HistoricEvent, count_stored_events, stored_events
from assetbus.consumers.storage.queue import lock_targets, pending_entries
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


@dataclass
class ReplayReport:
    dag_id: str
    dry_run: bool
    scanned: int = 0
    skipped: int = 0
    targets: list[TargetOutcome] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)
    published: int = 0

    def count(self, action: str) -> int:
        return sum(1 for t in self.targets if t.action == action)


async def replay(engine: AsyncEngine, dag: ConsumerDag, selection: ReplayRange, *, dry_run: bool = False,
                 publisher: ReadinessPublisher | None = None, on_progress: ProgressCallback | None = None,
                 page: int = 2000, chunk: int = 200) -> ReplayReport:
    report = ReplayReport(dag.dag_id, dry_run)
    by_target = await _scan(engine, dag, selection, report, page, on_progress)
    selected = {key: entries for key, entries in by_target.items()
                if selection.selects(key, _target_date(entries), entries)}
    async with engine.connect() as conn:
        taken = await targets_with_runs(conn, dag.dag_id, selected)
    todo = [key for key in sorted(selected, key=lambda k: (k is None, k or "")) if key not in taken]
    report.targets.extend(TargetOutcome(key, _target_date(selected[key]), len(selected[key]), "exists")
                          for key in selected if key in taken)
    for start in range(0, len(todo), chunk):
        keys = todo[start:start + chunk]
        if dry_run:
            report.targets.extend(_dry(dag, key, selected[key]) for key in keys)
        else:
            await _write(engine, dag, keys, selected, report)
        if on_progress is not None:
            on_progress("create", min(start + chunk, len(todo)), len(todo))
    if publisher is not None and report.runs:
        report.published = await publisher.publish(report.runs)
    return report


async def _scan(engine: AsyncEngine, dag: ConsumerDag, selection: ReplayRange, report: ReplayReport, page: int,
                on_progress: ProgressCallback | None) -> dict[str | None, list[QueueEntry]]:
    since = selection.since - MARGIN if selection.since is not None else None
    until = selection.until + MARGIN if selection.until is not None else None
    index = DagIndex([dag])
    by_target: dict[str | None, list[QueueEntry]] = {}
    async with engine.connect() as conn:
        total = await count_stored_events(conn, dag.assets, since=since, until=until)
        after = 0
        while True:
            rows = await stored_events(conn, dag.assets, after_id=after, limit=page, since=since, until=until)
            if not rows:
                break
            after = rows[-1].id
            entries, skips = index.route(_upstream(row) for row in rows)
            report.scanned += len(rows)
            report.skipped += len(skips)
            for entry in entries:
                by_target.setdefault(entry.target_key, []).append(entry)
            if on_progress is not None:
                on_progress("scan", report.scanned, max(total, report.scanned))
    return by_target


def _dry(dag: ConsumerDag, key: str | None, entries: list[QueueEntry]) -> TargetOutcome:
    queued = [PendingEntry(None, entry) for entry in entries]
    plans = plan_runs(dag, key, queued)
    if plans:
        return TargetOutcome(key, plans[0].target_date, len(entries), "would create", len(plans))
    return _incomplete(dag, key, queued)


async def _write(engine: AsyncEngine, dag: ConsumerDag, keys: list[str | None],
                 selected: dict[str | None, list[QueueEntry]], report: ReplayReport) -> None:
    async with engine.begin() as conn:
        await lock_targets(conn, [(dag.dag_id, key) for key in keys])
        taken = await targets_with_runs(conn, dag.dag_id, keys)  # a scheduler may have been quicker
        fresh = [key for key in keys if key not in taken]
        outcome = await queue_and_plan(conn, {dag.dag_id: dag}, [e for key in fresh for e in selected[key]],
                                       ORIGIN_REPLAY)
        untouched = [(dag.dag_id, key) for key in fresh if (dag.dag_id, key) not in outcome.waiting]
        queued = await pending_entries(conn, untouched)  # all of their history was queued before
        for key in fresh:
            target = (dag.dag_id, key)
            if outcome.planned.get(target):
                report.targets.append(TargetOutcome(key, _target_date(selected[key]), len(selected[key]), "created",
                                                    outcome.planned[target]))
            else:
                waiting = outcome.waiting.get(target) or [pending(row) for row in queued.get(target, [])]
                report.targets.append(_incomplete(dag, key, waiting))
        report.targets.extend(TargetOutcome(key, _target_date(selected[key]), len(selected[key]), "exists")
                              for key in keys if key in taken)
        report.runs.extend(outcome.runs)


def _incomplete(dag: ConsumerDag, key: str | None, queued: Sequence[PendingEntry]) -> TargetOutcome:
    missing = tuple(p for p in progress(dag, key, queued) if not p.complete)
    return TargetOutcome(key, _target_date([p.entry for p in queued]), len(queued), "incomplete", 0, missing)


def _target_date(entries: Sequence[QueueEntry]) -> datetime | None:
    return next((e.target_date for e in entries if e.target_date is not None), None)


def _upstream(row: HistoricEvent) -> UpstreamEvent:
    source = {"kind": row.source_kind, "dag_id": row.dag_id, "run_id": row.run_id, "task_id": row.task_id,
              "map_index": row.map_index, "try_number": row.try_number}
    return upstream_event(row.id, row.asset_name, row.partition_key, row.partition_date, source, row.created_at)
