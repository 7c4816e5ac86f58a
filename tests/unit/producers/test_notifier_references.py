"""A notifier copies references to the run from the callback context, never whole objects or logs."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from types import SimpleNamespace

from assetbus.producers import run_references


class DagRunState(str, Enum):  # noqa: UP042  (Airflow's states are str+Enum, not StrEnum)
    FAILED = "failed"


def test_references_come_from_an_airflow_shaped_context() -> None:
    dag_run = SimpleNamespace(dag_id="ingest", run_id="run-1", state=DagRunState.FAILED,
                              logical_date=datetime(2026, 10, 1, tzinfo=UTC))
    ti = SimpleNamespace(task_id="load", map_index=-1, try_number=2, state="failed", log_url="http://logs/1")
    refs = run_references({"dag_run": dag_run, "task_instance": ti, "reason": "task_failure",
                           "exception": ValueError("bad row 7\nTraceback ...")})
    assert refs == {"dag_id": "ingest", "run_id": "run-1", "logical_date": "2026-10-01T00:00:00+00:00",
                    "run_state": "failed", "task_id": "load", "map_index": -1, "try_number": 2,
                    "task_state": "failed", "log_url": "http://logs/1", "reason": "task_failure",
                    "exception": "ValueError: bad row 7"}


def test_long_texts_are_cut_and_missing_keys_left_out() -> None:
    refs = run_references({"run_id": "r", "exception": "x" * 10_000})
    assert refs == {"run_id": "r", "exception": "x" * 500}


def test_no_context_gives_no_references() -> None:
    assert run_references(None) == {}
