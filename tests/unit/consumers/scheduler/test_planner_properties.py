"""The planner's shortcuts against the model: compiled routes and the any-event plan give what the
schedule's own evaluation gives, for every DAG and sequence of events drawn."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from assetbus.consumers.scheduler import (
    AllOf,
    AnyOf,
    AssetWait,
    ConsumerDag,
    HourlyToDaily,
    Identity,
    StaticMap,
    ToUnpartitioned,
)
from assetbus.consumers.scheduler.mappings import Mapped, PartitionMapping, SkipReason
from assetbus.consumers.scheduler.payload import UpstreamEvent, upstream_event
from assetbus.consumers.scheduler.planner import (
    DagIndex,
    PendingEntry,
    QueueEntry,
    RunPlan,
    Skip,
    arrived,
    plan_runs,
)

T0 = datetime(2026, 10, 1, tzinfo=UTC)
ASSETS = ("a", "b", "c")
KEYS = ("k1", "k2", "2026-10-01T00:00:00+00:00", None)

mappings: st.SearchStrategy[PartitionMapping] = st.one_of(
    st.just(Identity()), st.just(ToUnpartitioned()), st.just(HourlyToDaily("UTC")),
    st.builds(lambda require_all: StaticMap({"k1": "x", "k2": "x"}, require_all=require_all), st.booleans()))
waits = st.builds(lambda asset, mapping: AssetWait(asset, mapping=mapping), st.sampled_from(ASSETS), mappings)


@st.composite
def dags(draw: st.DrawFn, dag_id: str) -> ConsumerDag:
    first = draw(waits)
    schedule: AssetWait | AllOf | AnyOf = first
    if draw(st.booleans()):
        second = draw(waits.filter(lambda w: w.asset != first.asset))
        schedule = AllOf(first, second) if draw(st.booleans()) else AnyOf(first, second)
    return ConsumerDag(dag_id=dag_id, schedule=schedule, coalesce=draw(st.booleans()))


@st.composite
def events(draw: st.DrawFn) -> list[UpstreamEvent]:
    n = draw(st.integers(0, 30))
    found = []
    for i in range(n):
        key = draw(st.sampled_from(KEYS))
        when = T0 + timedelta(hours=draw(st.integers(0, 30))) if draw(st.booleans()) else None
        source = {"kind": "dag", "dag_id": draw(st.sampled_from(["ingest", "d0", "d1"])), "run_id": "r",
                  "task_id": None, "map_index": None, "try_number": None}
        found.append(upstream_event(i + 1, draw(st.sampled_from(ASSETS)), key, when, source, T0))
    return found


def reference_route(dag_list: Sequence[ConsumerDag], batch: Sequence[UpstreamEvent]
                    ) -> tuple[list[QueueEntry], list[Skip]]:
    """Routing as the definitions say it, DAG by DAG."""
    entries: list[QueueEntry] = []
    skips: list[Skip] = []
    for event in batch:
        emitter = event.payload.get("source") or {}
        for dag in dag_list:
            if event.asset_name not in dag.waits:
                continue
            if emitter.get("dag_id") == dag.dag_id:
                skips.append(Skip(dag.dag_id, event, SkipReason.SELF_TRIGGER,
                                  f"emitted by run {emitter.get('run_id')!r} of {dag.dag_id} itself; a DAG "
                                  "does not trigger itself"))
                continue
            mapped = dag.mapping_for(event.asset_name).map(event.partition_key, event.partition_date)
            if isinstance(mapped, Mapped):
                entries.append(QueueEntry(dag.dag_id, mapped.target_key, mapped.target_date, event.asset_name,
                                          mapped.slot, event))
            else:
                skips.append(Skip(dag.dag_id, event, mapped.reason, mapped.detail))
    return entries, skips


def reference_plans(dag: ConsumerDag, target_key: str | None, ordered: Sequence[PendingEntry]) -> list[RunPlan]:
    """Planning by evaluating the schedule: once over everything (coalescing), or after each entry."""
    def plan(window: Sequence[PendingEntry]) -> RunPlan:
        date = next((p.entry.target_date for p in window if p.entry.target_date is not None), None)
        return RunPlan(dag.dag_id, target_key, date, tuple(window))

    if dag.coalesce:
        return [plan(ordered)] if ordered and dag.schedule.holds(arrived(ordered), target_key) else []
    plans: list[RunPlan] = []
    window: list[PendingEntry] = []
    for entry in ordered:
        window.append(entry)
        if dag.schedule.holds(arrived(window), target_key):
            plans.append(plan(window))
            window = []
    return plans


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True).flatmap(
    lambda ids: st.tuples(*(dags(f"d{i}") for i in ids))), events())
def test_compiled_routes_and_plans_give_what_the_schedule_gives(dag_list: tuple[ConsumerDag, ...],
                                                                batch: list[UpstreamEvent]) -> None:
    index = DagIndex(dag_list)
    entries, skips = index.route(batch)
    expected_entries, expected_skips = reference_route(list(index.by_id.values()), batch)
    assert entries == expected_entries
    assert skips == expected_skips
    by_target: dict[tuple[str, str | None], list[PendingEntry]] = {}
    for entry in entries:
        by_target.setdefault(entry.target, []).append(PendingEntry(None, entry))
    for (dag_id, key), ordered in by_target.items():
        dag = index.by_id[dag_id]
        assert plan_runs(dag, key, ordered) == reference_plans(dag, key, ordered)


def test_only_single_waits_whose_mapping_takes_any_event_take_the_shortcut() -> None:
    assert ConsumerDag(dag_id="i", schedule=AssetWait("a", mapping=Identity())).ready_at_any_event
    assert ConsumerDag(dag_id="u", schedule=AssetWait("a", mapping=ToUnpartitioned())).ready_at_any_event
    assert ConsumerDag(dag_id="s", schedule=AssetWait("a", mapping=StaticMap({"k": "x"}))).ready_at_any_event
    assert not ConsumerDag(dag_id="r", schedule=AssetWait("a", mapping=StaticMap({"k": "x"}, require_all=True))
                           ).ready_at_any_event
    assert not ConsumerDag(dag_id="h", schedule=AssetWait("a", mapping=HourlyToDaily("UTC"))).ready_at_any_event
    assert not ConsumerDag(dag_id="o", schedule=AnyOf(AssetWait("a"), AssetWait("b"))).ready_at_any_event
