"""`assetbus bench airflow` without Airflow: its settings, and how samples become figures."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from assetbus.benchmarks.airflow import (
    AirflowBenchOptions,
    AirflowBenchReport,
    Burst,
    Round,
    airflow_time,
    environment,
)
from tests.bench_figures import AIRFLOW_REQUIRED as REQUIRED


def test_settings_are_airflows_environment_variables() -> None:
    assert environment({"scheduler.scheduler_idle_sleep_time": "0.2", "core.parallelism": "8"}) == {
        "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2", "AIRFLOW__CORE__PARALLELISM": "8"}
    with pytest.raises(ValueError, match=r"section\.key"):
        environment({"parallelism": "8"})


def test_postgres_gets_airflows_default_api_workers_and_a_concurrent_bridge_sqlite_one_of_each() -> None:
    postgres, sqlite = AirflowBenchOptions(), AirflowBenchOptions(metadata="sqlite")
    assert postgres.settings()["api.workers"] == "4" and postgres.concurrency == 4
    assert sqlite.settings()["api.workers"] == "1" and sqlite.concurrency == 1
    assert postgres.settings()["core.executor"] == "LocalExecutor"
    assert postgres.settings()["scheduler.scheduler_idle_sleep_time"] == "1"  # Airflow's default


def test_given_settings_win() -> None:
    options = AirflowBenchOptions(airflow_settings=(("scheduler.scheduler_idle_sleep_time", "0.2"),
                                                    ("api.workers", "2")), bridge_concurrency=8)
    assert options.settings()["scheduler.scheduler_idle_sleep_time"] == "0.2"
    assert options.settings()["api.workers"] == "2"
    assert options.concurrency == 8


def test_airflow_timestamps_are_read_with_their_offset() -> None:
    at = datetime(2026, 12, 2, 2, 30, 0, 123456, tzinfo=UTC).timestamp()
    assert airflow_time("2026-12-02T02:30:00.123456Z") == pytest.approx(at)
    assert airflow_time("2026-12-02T03:30:00.123456+01:00") == pytest.approx(at)


def test_runs_per_second_count_the_gaps_between_first_and_last_run() -> None:
    burst = Burst(runs=201, first_to_last_s=10.0, start_to_last_s=14.0, events_first_to_last_s=8.0)
    assert burst.runs_per_s == pytest.approx(20.0)
    assert burst.events_per_s == pytest.approx(25.0)
    assert math.isnan(Burst(runs=5, first_to_last_s=1.0, start_to_last_s=2.0).events_per_s)


def test_every_figure_is_there_and_a_missing_sample_is_left_out() -> None:
    report = AirflowBenchReport(AirflowBenchOptions(samples=3))
    report.rounds = [Round(event=0.1 * i, native_run=1.0 + i, bridge_run=0.2, rest_run=1.1, rest_post=0.05)
                     for i in range(1, 4)]
    report.rounds[1].rest_run = report.rounds[1].rest_post = None  # a POST Airflow answered with a 5xx
    report.bridge = Burst(runs=200, first_to_last_s=9.95, start_to_last_s=12.0)
    report.native = Burst(runs=200, first_to_last_s=19.9, start_to_last_s=25.0, events_first_to_last_s=19.0,
                          lag_ms=tuple(float(v) for v in range(200)))
    figures = report.figures()
    assert set(figures) == set(REQUIRED)
    assert all(math.isfinite(v) and v > 0 for v in figures.values()), figures
    assert figures["airflow_event_p50_ms"] == pytest.approx(200.0)
    assert figures["airflow_native_run_p99_ms"] == pytest.approx(4000.0)
    assert report.latencies_ms("rest_run") == [1100.0, 1100.0]
    assert figures["airflow_bridge_runs_per_s"] == pytest.approx(20.0)
    assert figures["airflow_native_lag_p50_ms"] == pytest.approx(100.0)


def test_smoke_sizes_are_tiny() -> None:
    smoke = AirflowBenchOptions.smoke()
    assert smoke.samples <= 3 and smoke.partitions <= 5 and smoke.metadata == "postgres"
    assert smoke.settings()["api.workers"] == "1"  # Airflow starts sooner


def test_first_emits_become_one_median_per_identity_mode_and_only_when_measured() -> None:
    report = AirflowBenchReport(AirflowBenchOptions(first_emits=3))
    assert not any(name.startswith("airflow_first_emit") for name in report.figures())
    report.first_emit_ms = {"credential": [200.0, 233.0, 400.0], "attested": [41.0, 93.0, 300.0]}
    figures = report.figures()
    assert (figures["airflow_first_emit_credential_p50_ms"], figures["airflow_first_emit_attested_p50_ms"]) == \
        (233.0, 93.0)
