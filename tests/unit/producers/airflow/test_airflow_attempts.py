"""Which attempt an Airflow context belongs to: read from Airflow's objects, never from arguments."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from assetbus.producers import NoEmissionContext
from assetbus.producers.airflow.attempt import asset_ref, attempt_from_context
from assetbus.schemas import AssetRef


def test_a_task_context_names_the_attempt_and_its_outlets() -> None:
    task = SimpleNamespace(outlets=[SimpleNamespace(name="orders", uri="s3://b/orders"), SimpleNamespace(name="x")])
    ti = SimpleNamespace(id="0190-ti", dag_id="ingest", run_id="r1", task_id="load", map_index=3, try_number=2,
                         task=task)
    attempt = attempt_from_context({"ti": ti})
    assert attempt.request() == {"kind": "task", "dag_id": "ingest", "run_id": "r1", "task_id": "load",
                                 "map_index": 3, "try_number": 2, "ti_id": "0190-ti"}
    assert attempt.outlets == frozenset({AssetRef(name="orders", uri="s3://b/orders")})


def test_a_dag_level_callback_context_names_the_dag_run_without_task_fields() -> None:
    attempt = attempt_from_context({"dag_run": SimpleNamespace(dag_id="ingest", run_id="r1"), "reason": "failed"})
    assert not attempt.is_task
    assert attempt.request() == {"kind": "dag", "dag_id": "ingest", "run_id": "r1"}


def test_no_task_and_no_dag_run_is_refused_with_a_clear_error() -> None:
    with pytest.raises(NoEmissionContext, match="needs a running Airflow task or callback"):
        attempt_from_context({})


def test_only_assets_with_a_name_and_a_uri_are_emittable() -> None:
    assert asset_ref(SimpleNamespace(name="a", uri="s3://a")) == AssetRef(name="a", uri="s3://a")
    assert asset_ref(SimpleNamespace(name="alias-only")) is None


def test_a_dag_level_callback_holding_the_last_task_instance_still_names_the_dag_run() -> None:
    ti = SimpleNamespace(id="0190-ti", dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=2)
    context = {"ti": ti, "dag_run": SimpleNamespace(dag_id="ingest", run_id="r1"), "reason": "task_failure"}
    assert attempt_from_context(context).request() == {"kind": "dag", "dag_id": "ingest", "run_id": "r1"}
