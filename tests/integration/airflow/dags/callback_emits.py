"""Callbacks as Airflow users write them (tests only): each emits `callback_signals`, naming itself in
`extra["callback"]`, with a plain `asset.emit()` (after `install_asset_emit()`) or `emit(asset, context=...)`.

`flaky` fails its first try (on_retry_callback: `asset.emit()`); its retry fails when conf["fail"] is
true (on_failure_callback: `emit(asset, context=context)`), else succeeds (on_success_callback:
`asset.emit()`). `steady` succeeds; its success callbacks are a plain `asset.emit()` and an
AssetbusNotifier of `callback_inlet`, an asset the task lists only as an inlet. The DAG-level callbacks
(`asset.emit()` on failure, `emit(asset, context=context)` on success) run in the dag-processor.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import AssetbusNotifier, emit, install_asset_emit

install_asset_emit()

signals = Asset("airflow_test.callback_signals", uri="s3://example/callback_signals")
inlet_only = Asset("airflow_test.callback_inlet", uri="s3://example/callback_inlet")


def _key(context: Any, name: str) -> str:
    ti = context.get("ti")
    try_number = getattr(ti, "try_number", None) if name.startswith("task") else None
    return f"{name}-{try_number}" if try_number is not None else name


def task_retry(context: Any) -> None:
    signals.emit(extra={"callback": "task-retry"}, partition_key=_key(context, "task-retry"))  # type: ignore[attr-defined]


def task_failure(context: Any) -> None:
    emit(signals, extra={"callback": "task-failure"}, partition_key=_key(context, "task-failure"), context=context)


def task_success(context: Any) -> None:
    signals.emit(extra={"callback": "task-success"}, partition_key=_key(context, "task-success"))  # type: ignore[attr-defined]


def dag_failure(context: Any) -> None:
    signals.emit(extra={"callback": "dag-failure"}, partition_key="dag-failure")  # type: ignore[attr-defined]


def dag_success(context: Any) -> None:
    emit(signals, extra={"callback": "dag-success"}, partition_key="dag-success", context=context)


with DAG(dag_id="callback_emits", schedule=None, catchup=False, on_failure_callback=dag_failure,
         on_success_callback=dag_success):

    @task(outlets=[signals], retries=1, retry_delay=timedelta(seconds=1), on_retry_callback=task_retry,
          on_failure_callback=task_failure, on_success_callback=task_success)
    def flaky(**context: Any) -> None:
        if context["ti"].try_number == 1 or (context["dag_run"].conf or {}).get("fail"):
            raise RuntimeError(f"failing on purpose in try {context['ti'].try_number}")

    @task(outlets=[signals], inlets=[inlet_only],
          on_success_callback=[task_success, AssetbusNotifier(inlet_only, extra={"callback": "inlet-notifier"})])
    def steady() -> None:
        pass

    flaky() >> steady()
