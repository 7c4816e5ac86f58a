"""Callbacks as Airflow 3.3 runs them: a task's callbacks (the attempt has finished) may publish its inlets
too, and a plain `asset.emit()` finds the context Airflow passes the callback, or says what to use."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from assetbus.producers import NoEmissionContext
from assetbus.producers.airflow.attempt import Attempt, attempt_from_context, callback_context, running_attempt
from assetbus.schemas import AssetRef

ORDERS = SimpleNamespace(name="orders", uri="s3://b/orders")
INCIDENTS = SimpleNamespace(name="incidents", uri="s3://b/incidents")


def _ti(state: str) -> SimpleNamespace:
    task = SimpleNamespace(outlets=[ORDERS], inlets=[INCIDENTS])
    return SimpleNamespace(id="0190-ti", dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1,
                           state=state, task=task)


def test_a_running_task_may_emit_only_its_outlets_and_asks_for_a_plain_task_token() -> None:
    attempt = attempt_from_context({"ti": _ti("running")})
    assert not attempt.callback
    assert attempt.publishable == frozenset({AssetRef(name="orders", uri="s3://b/orders")})
    assert "callback" not in attempt.request()


@pytest.mark.parametrize("state", ["success", "failed", "up_for_retry"])
def test_a_finished_attempts_callback_may_emit_its_inlets_too_and_says_so(state: str) -> None:
    attempt = attempt_from_context({"ti": _ti(state)})
    assert attempt.callback and attempt.request()["callback"] is True
    assert attempt.publishable == frozenset({AssetRef(name="orders", uri="s3://b/orders"),
                                             AssetRef(name="incidents", uri="s3://b/incidents")})
    assert attempt.key != attempt_from_context({"ti": _ti("running")}).key  # not the task body's cached token


def _runner(module: str, name: str) -> Callable[[Mapping[str, Any], Callable[[], Any]], Any]:
    """A function named like one of Airflow's callback runners, in a module of that name."""
    namespace: dict[str, Any] = {"__name__": module}
    exec(f"def {name}(context, callback):\n    return callback()\n", namespace)
    function: Callable[[Mapping[str, Any], Callable[[], Any]], Any] = namespace[name]
    assert isinstance(function, types.FunctionType)
    return function


def test_a_plain_emit_in_a_dag_level_callback_finds_the_context_airflow_passes_it() -> None:
    context = {"dag_run": SimpleNamespace(dag_id="ingest", run_id="r1"), "reason": "task_failure"}
    runner = _runner("airflow.dag_processing.processor", "_execute_dag_callbacks")
    assert runner(context, callback_context) is context
    attempt = runner(context, running_attempt)
    assert attempt == Attempt(dag_id="ingest", run_id="r1")


def test_a_plain_emit_in_a_task_callback_on_the_worker_emits_as_the_finished_attempt() -> None:
    runner = _runner("airflow.sdk.execution_time.task_runner", "_run_task_state_change_callbacks")
    attempt = runner({"ti": _ti("failed")}, running_attempt)
    assert (attempt.task_id, attempt.callback) == ("load", True)


def test_in_a_callback_runner_without_a_context_the_error_says_what_to_use() -> None:
    assert callback_context() is None
    runner = _runner("airflow.dag_processing.processor", "_execute_dag_callbacks")
    with pytest.raises(NoEmissionContext, match=r"AssetbusNotifier\(asset, \.\.\.\) or emit\(asset, \.\.\., "
                                                r"context=context\)"):
        runner(None, running_attempt)  # type: ignore[arg-type]  # a runner that keeps no context mapping


def test_the_provider_registers_the_triggers_and_the_sensor_under_its_integration() -> None:
    from assetbus.producers.airflow.provider import get_provider_info

    info = get_provider_info()
    assert [i["integration-name"] for i in info["integrations"]] == ["assetbus"]
    assert info["triggers"] == [{"integration-name": "assetbus",
                                 "python-modules": ["assetbus.producers.airflow.triggers"]}]
    assert info["sensors"] == [{"integration-name": "assetbus",
                                "python-modules": ["assetbus.producers.airflow.sensors"]}]
