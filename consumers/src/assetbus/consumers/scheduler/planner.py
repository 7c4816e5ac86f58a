"""Fan-out as pure functions, no I/O (the scheduler and replay call them in their transactions): route events
to the DAGs waiting on them (`DagIndex.route`), plan runs for one target partition from its queued entries in
arrival order (`plan_runs`). A coalescing DAG evaluates once over everything queued (one run takes all of
it); a one-run-per-event DAG after each entry (each time the condition holds, a run takes what is queued).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from assetbus.consumers.scheduler.conditions import Progress
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.mappings import Mapped, SkipReason, Unmappable
from assetbus.consumers.scheduler.payload import UpstreamEvent

TargetKey = tuple[str, str | None]
"""(dag_id, target partition key or None)."""


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class QueueEntry:
    """One upstream event queued for one DAG's target partition."""

    dag_id: str
    target_key: str | None
    target_date: datetime | None
    asset_name: str
    slot: str
    event: UpstreamEvent

    @property
    def target(self) -> TargetKey:
        return (self.dag_id, self.target_key)


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class PendingEntry:
    """A queued entry: stored already (`row_id`), or new in this batch (None)."""

    row_id: int | None
    entry: QueueEntry


@dataclass(frozen=True, slots=True)
class Skip:
    dag_id: str
    event: UpstreamEvent
    reason: SkipReason
    detail: str


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class RunPlan:
    """A consumer run to create for one target partition, with the queued entries it consumes."""

    dag_id: str
    target_key: str | None
    target_date: datetime | None
    entries: tuple[PendingEntry, ...]

    @property
    def events(self) -> list[UpstreamEvent]:
        return [pending.entry.event for pending in self.entries]


Route = tuple[str, Callable[[str | None, datetime | None], Mapped | Unmappable]]
"""(dag id, its mapping's `map` for one asset): what routing an event of that asset to that DAG takes."""


class DagIndex:
    """The active consumer DAGs, by id and by the assets they wait on, with each asset's routes compiled once
    (per load of the definitions)."""

    def __init__(self, dags: Iterable[ConsumerDag]) -> None:
        self.by_id: dict[str, ConsumerDag] = {dag.dag_id: dag for dag in dags}
        self.by_asset: dict[str, list[ConsumerDag]] = {}
        for dag in self.by_id.values():
            for asset in dag.assets:
                self.by_asset.setdefault(asset, []).append(dag)
        self.routes: dict[str, tuple[Route, ...]] = {
            asset: tuple((dag.dag_id, dag.mapping_for(asset).map) for dag in waiting)
            for asset, waiting in self.by_asset.items()}

    def route(self, events: Iterable[UpstreamEvent]) -> tuple[list[QueueEntry], list[Skip]]:
        """Map each event for each DAG waiting on its asset, except for the DAG whose own run emitted it."""
        entries: list[QueueEntry] = []
        skips: list[Skip] = []
        routes = self.routes
        for event in events:
            asset = event.asset_name
            found = routes.get(asset)
            if found is None:
                continue
            emitter = event.payload.get("source") or {}
            emitted_by = emitter.get("dag_id")
            for dag_id, mapping in found:
                if emitted_by == dag_id:
                    skips.append(Skip(dag_id, event, SkipReason.SELF_TRIGGER,
                                      f"emitted by run {emitter.get('run_id')!r} of {dag_id} itself; a DAG "
                                      "does not trigger itself"))
                    continue
                mapped = mapping(event.partition_key, event.partition_date)
                if type(mapped) is Mapped:
                    entries.append(QueueEntry(dag_id, mapped.target_key, mapped.target_date, asset, mapped.slot,
                                              event))
                else:
                    assert isinstance(mapped, Unmappable)
                    skips.append(Skip(dag_id, event, mapped.reason, mapped.detail))
        return entries, skips


def arrived(entries: Iterable[PendingEntry]) -> dict[str, frozenset[str]]:
    slots: dict[str, set[str]] = {}
    for pending in entries:
        slots.setdefault(pending.entry.asset_name, set()).add(pending.entry.slot)
    return {asset: frozenset(found) for asset, found in slots.items()}


def plan_runs(dag: ConsumerDag, target_key: str | None, ordered: Sequence[PendingEntry]) -> list[RunPlan]:
    if dag.ready_at_any_event:  # the condition holds as soon as one entry is queued
        if not ordered:
            return []
        return [_plan(dag, target_key, ordered)] if dag.coalesce else [_plan(dag, target_key, (e,)) for e in ordered]
    if dag.coalesce:
        if ordered and dag.schedule.holds(arrived(ordered), target_key):
            return [_plan(dag, target_key, ordered)]
        return []
    plans: list[RunPlan] = []
    window: list[PendingEntry] = []
    slots: dict[str, set[str]] = {}  # arrived(window), kept as the window grows
    for entry in ordered:
        window.append(entry)
        slots.setdefault(entry.entry.asset_name, set()).add(entry.entry.slot)
        if dag.schedule.holds({asset: frozenset(found) for asset, found in slots.items()}, target_key):
            plans.append(_plan(dag, target_key, window))
            window, slots = [], {}
    return plans


def progress(dag: ConsumerDag, target_key: str | None, pending: Sequence[PendingEntry]) -> list[Progress]:
    """How far each asset wait of the DAG is for a target (for operators: `2026-10-02: orders 2/24 hours`)."""
    return dag.schedule.progress(arrived(pending), target_key)


def _plan(dag: ConsumerDag, target_key: str | None, entries: Sequence[PendingEntry]) -> RunPlan:
    target_date = next((p.entry.target_date for p in entries if p.entry.target_date is not None), None)
    return RunPlan(dag.dag_id, target_key, target_date, tuple(entries))
