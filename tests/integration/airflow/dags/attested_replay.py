"""A task and its success callback each emit once and leave their attested token where the test reads it
(tests only: a token that leaked), in the folder conf["tokens"]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import attempt_from_context, emit, running_attempt, token_source

replayed = Asset("airflow_test.replayed", uri="s3://example/replayed")


def _leak(context: Any, name: str, attempt: Any) -> None:
    folder = Path(context["dag_run"].conf["tokens"])
    (folder / f"{name}.token").write_text(token_source().credentials(attempt).token)


def in_callback(context: Any) -> None:
    emit(replayed, partition_key="in-callback", dedupe_key="in-callback", context=context)
    _leak(context, "callback", attempt_from_context(context))


with DAG(dag_id="attested_replay", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task(outlets=[replayed], on_success_callback=in_callback)
    def attempt(**context: Any) -> None:
        emit(replayed, partition_key="in-task", dedupe_key="in-task")
        _leak(context, "task", running_attempt())

    attempt()
