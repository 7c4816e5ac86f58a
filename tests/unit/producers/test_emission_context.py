"""The running task's identity comes from its runner: the environment, or an explicit context."""

from __future__ import annotations

import asyncio
import json

import pytest

from assetbus.producers import NoEmissionContext, current_context, task_context
from assetbus.producers.context import context_from_environment
from assetbus.producers.tokens import dag_token, task_token
from assetbus.schemas import AssetRef, SourceKind

SECRET = "unit-test-secret-of-at-least-32-bytes"


def test_the_environment_names_token_broker_prefix_and_outlets() -> None:
    token = task_token(SECRET, "ingest", "run-1", "load")
    outlets = json.dumps([{"name": "orders", "uri": "s3://bucket/orders/"}])
    context = context_from_environment({"ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": "broker:9092",
                                        "ASSETBUS_TOPIC_PREFIX": "staging", "ASSETBUS_OUTLETS": outlets})
    assert context is not None
    assert (context.kafka.bootstrap, context.topics.emissions) == ("broker:9092", "staging.emissions")
    assert context.outlets == frozenset({AssetRef(name="orders", uri="s3://bucket/orders/")})
    assert context.source.task_id == "load"


def test_without_a_token_in_the_environment_there_is_no_context() -> None:
    assert context_from_environment({"KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}) is None


def test_malformed_outlets_are_a_clear_error() -> None:
    token = task_token(SECRET, "ingest", "run-1", "load")
    with pytest.raises(NoEmissionContext, match="ASSETBUS_OUTLETS"):
        context_from_environment({"ASSETBUS_TOKEN": token, "ASSETBUS_OUTLETS": "orders"})


def test_an_explicit_context_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN", task_token(SECRET, "ingest", "run-1", "load"))
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "from-env:9092")
    with task_context(dag_token(SECRET, "ingest", "run-1")):
        context = current_context()
        assert context.source.kind is SourceKind.DAG and context.source.task_id is None
        assert context.kafka.bootstrap == "from-env:9092"  # unset values still come from the environment
    assert current_context().source.kind is SourceKind.TASK


async def test_an_explicit_context_follows_asyncio_tasks_started_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSETBUS_TOKEN", raising=False)

    async def who() -> str | None:
        return current_context().source.task_id

    with task_context(task_token(SECRET, "ingest", "run-1", "load")):
        inside = asyncio.create_task(who())
    assert await inside == "load"
    with pytest.raises(NoEmissionContext):
        current_context()
