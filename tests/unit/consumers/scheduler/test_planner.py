"""Fan-out planning without a broker: routing events to DAGs, coalescing, one run per event, all-of."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from assetbus.consumers.scheduler import (
    AllOf,
    AssetWait,
    ConsumerDag,
    HourlyToDaily,
    Identity,
    SkipReason,
    ToUnpartitioned,
)
from assetbus.consumers.scheduler.payload import UpstreamEvent, source_json, upstream_event
from assetbus.consumers.scheduler.planner import DagIndex, PendingEntry, QueueEntry, plan_runs, progress
from assetbus.schemas import Provenance, SourceKind

SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1)
T0 = datetime(2026, 10, 1, tzinfo=UTC)


def event(event_id: int, asset: str, key: str | None = None, when: datetime | None = None) -> UpstreamEvent:
    return upstream_event(event_id, asset, key, when, source_json(SOURCE), T0)


def queued(entries: list[QueueEntry]) -> list[PendingEntry]:
    return [PendingEntry(i + 1, entry) for i, entry in enumerate(entries)]


def test_events_are_routed_only_to_dags_waiting_on_their_asset() -> None:
    index = DagIndex([ConsumerDag(dag_id="a", schedule=AssetWait("orders")),
                      ConsumerDag(dag_id="b", schedule=AssetWait("customers"))])
    entries, skips = index.route([event(1, "orders", "batch-1"), event(2, "other")])
    assert [(e.dag_id, e.target_key) for e in entries] == [("a", "batch-1")]
    assert skips == []


def test_an_unmappable_event_becomes_a_skip_with_its_reason() -> None:
    index = DagIndex([ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("UTC")))])
    entries, skips = index.route([event(1, "clicks", "batch-1")])
    assert entries == []
    assert [(s.dag_id, s.reason) for s in skips] == [("daily", SkipReason.NO_PARTITION_TIME)]


def test_coalescing_gives_one_run_with_every_queued_event() -> None:
    dag = ConsumerDag(dag_id="c", schedule=AssetWait("orders", mapping=ToUnpartitioned()))
    entries, _ = DagIndex([dag]).route([event(i, "orders") for i in range(1, 6)])
    plans = plan_runs(dag, None, queued(entries))
    assert len(plans) == 1
    assert [e.event_id for e in plans[0].events] == [1, 2, 3, 4, 5]


def test_one_run_per_event_gives_five_runs_for_five_events() -> None:
    dag = ConsumerDag(dag_id="c", schedule=AssetWait("orders", mapping=ToUnpartitioned()), coalesce=False)
    entries, _ = DagIndex([dag]).route([event(i, "orders") for i in range(1, 6)])
    plans = plan_runs(dag, None, queued(entries))
    assert [[e.event_id for e in p.events] for p in plans] == [[1], [2], [3], [4], [5]]


def test_all_of_waits_for_the_second_asset_and_takes_both() -> None:
    dag = ConsumerDag(dag_id="j", schedule=AllOf(AssetWait("orders"), AssetWait("customers")))
    index = DagIndex([dag])
    first, _ = index.route([event(1, "orders", "2026-10-01")])
    assert plan_runs(dag, "2026-10-01", queued(first)) == []
    second, _ = index.route([event(2, "customers", "2026-10-01")])
    plans = plan_runs(dag, "2026-10-01", queued(first + second))
    assert len(plans) == 1 and {e.asset_name for e in plans[0].events} == {"orders", "customers"}


def test_one_run_per_event_with_all_of_runs_when_the_condition_completes() -> None:
    dag = ConsumerDag(dag_id="j", schedule=AllOf(AssetWait("orders"), AssetWait("customers")), coalesce=False)
    entries, _ = DagIndex([dag]).route([event(1, "orders", "k"), event(2, "orders", "k"), event(3, "customers", "k")])
    plans = plan_runs(dag, "k", queued(entries))
    assert [[e.event_id for e in p.events] for p in plans] == [[1, 2, 3]]


def test_a_daily_roll_up_plans_a_run_only_with_the_24th_hour() -> None:
    dag = ConsumerDag(dag_id="d", schedule=AssetWait("clicks", mapping=HourlyToDaily("UTC")))
    hours = [event(h + 1, "clicks", f"h{h}", T0 + timedelta(hours=h)) for h in range(24)]
    entries, _ = DagIndex([dag]).route(hours)
    assert plan_runs(dag, "2026-10-01", queued(entries[:23])) == []
    assert [str(p) for p in progress(dag, "2026-10-01", queued(entries[:23]))] == ["clicks 23/24 hours"]
    plans = plan_runs(dag, "2026-10-01", queued(entries))
    assert len(plans) == 1 and len(plans[0].events) == 24
    assert plans[0].target_date == T0


def test_identity_targets_carry_the_partition_date() -> None:
    dag = ConsumerDag(dag_id="i", schedule=AssetWait("orders", mapping=Identity()))
    entries, _ = DagIndex([dag]).route([event(1, "orders", "batch-41", T0)])
    (plan,) = plan_runs(dag, "batch-41", queued(entries))
    assert (plan.target_key, plan.target_date) == ("batch-41", T0)


def test_an_event_emitted_by_a_run_of_the_waiting_dag_itself_is_skipped_as_self_trigger() -> None:
    investigate = ConsumerDag(dag_id="investigate", schedule=AssetWait("incidents"))
    others = ConsumerDag(dag_id="pager", schedule=AssetWait("incidents"))
    own = Provenance(kind=SourceKind.DAG, dag_id="investigate", run_id="assetbus__42")
    entries, skips = DagIndex([investigate, others]).route(
        [upstream_event(1, "incidents", None, None, source_json(own), T0)])
    assert [e.dag_id for e in entries] == ["pager"]  # another DAG still reacts
    assert [(s.dag_id, s.reason) for s in skips] == [("investigate", SkipReason.SELF_TRIGGER)]
    assert "assetbus__42" in skips[0].detail


def test_a_dag_whose_outlets_feed_its_schedule_feeds_itself() -> None:
    dag = ConsumerDag(dag_id="d", schedule=AllOf(AssetWait("a"), AssetWait("b")), outlets=("b", "c"))
    assert dag.feeds_itself() == ["b"]
    assert dag.feeds_itself({"a"}) == ["a", "b"]
    assert ConsumerDag(dag_id="e", schedule=AssetWait("a")).feeds_itself({"z"}) == []


def test_a_definition_without_outlets_keeps_its_fingerprint() -> None:
    plain = ConsumerDag(dag_id="d", schedule=AssetWait("a"))
    assert "outlets" not in plain.definition()
    assert ConsumerDag.from_definition(plain.definition()).fingerprint() == plain.fingerprint()
