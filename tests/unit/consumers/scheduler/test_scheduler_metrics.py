"""The scheduler's metrics: runs per DAG, readiness latency from the newest triggering event (live runs only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from assetbus.consumers.scheduler.metrics import SchedulerMetrics, newest_event_time
from assetbus.consumers.storage.runs import RunRow


def run(origin: str, *stored: datetime, dag_id: str = "daily") -> RunRow:
    events = [{"event_id": i, "timestamp": t.isoformat()} for i, t in enumerate(stored)]
    return RunRow(1, f"r-{origin}", dag_id, "2026-10-01", None, 1, events, origin, "queued", False, 0, None, None,
                  datetime.now(UTC), None, None)


def test_latency_counts_from_the_newest_event_of_a_live_run() -> None:
    now = datetime.now(UTC)
    live = run("scheduler", now - timedelta(hours=1), now - timedelta(seconds=2))
    assert newest_event_time(live) == (now - timedelta(seconds=2)).timestamp()
    metrics = SchedulerMetrics()
    metrics.applied(events=3, unreadable=1, skipped=0, runs=[live], seconds=0.01)
    metrics.published([live, run("replay", now - timedelta(days=30))])
    r = metrics.registry
    assert r.get_sample_value("assetbus_scheduler_runs_created_total", {"dag_id": "daily"}) == 1
    assert r.get_sample_value("assetbus_scheduler_signals_published_total", {"dag_id": "daily"}) == 2
    assert r.get_sample_value("assetbus_scheduler_readiness_latency_seconds_count") == 1  # the replay is left out
    latency = r.get_sample_value("assetbus_scheduler_readiness_latency_seconds_sum")
    assert latency is not None and 2 <= latency < 60


def test_the_newest_event_is_found_in_any_order_and_a_time_without_zone_reads_as_utc() -> None:
    newest = datetime(2026, 10, 1, 12, tzinfo=UTC)
    shuffled = run("scheduler", newest - timedelta(hours=2), newest, newest - timedelta(hours=1))
    assert newest_event_time(shuffled) == newest.timestamp()
    naive = run("scheduler")
    naive.events.append({"event_id": 9, "timestamp": "2026-10-01T13:00:00"})
    assert newest_event_time(naive) == (newest + timedelta(hours=1)).timestamp()
    assert newest_event_time(run("scheduler")) is None


def test_the_consumer_shell_counts_its_offsets_into_them() -> None:
    from assetbus.producers.kafka.offsets import OffsetMetrics

    metrics = SchedulerMetrics()
    shell_side: OffsetMetrics = metrics  # what ServiceShell(metrics=...) takes
    shell_side.consumer_lag.set(2)
    shell_side.rebalances.inc()
    r = metrics.registry
    assert r.get_sample_value("assetbus_scheduler_consumer_lag") == 2
    assert r.get_sample_value("assetbus_scheduler_rebalances_total") == 1
