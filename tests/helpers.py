"""Small test helpers: waiting on conditions (never bare sleeps), reading back the database."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka.errors import KafkaError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from assetbus.plan import Acl, Plan

T = TypeVar("T")
Model = TypeVar("Model", bound="BaseModel")


def acls_of(plan: Plan, role: str) -> list[Acl]:
    """The ACLs of `role`'s principal in a topics plan (a principal shared by roles has the ACLs of each)."""
    return [acl for acl in plan.acls if acl.principal == plan.principals[role]]


def replaced(model: Model, **changes: Any) -> Model:
    """A validated copy of a frozen settings model with `changes` applied."""
    return type(model).model_validate({**model.model_dump(), **changes})


def not_yet(error: BaseException) -> bool:
    """A failure that means "ask again": Kafka's retriable errors (a coordinator or leader being elected,
    a broker that has not applied new metadata yet), by their own `retriable` flag."""
    return isinstance(error, KafkaError) and bool(error.retriable)


async def wait_for(condition: Callable[[], Awaitable[T | None]], *, timeout_s: float = 30.0, interval: float = 0.05,
                   what: str = "condition") -> T:
    """Poll `condition` until it returns a truthy value (so never None); fail with `what` after `timeout` seconds.

    A retriable Kafka error raised by `condition` counts as "not yet"; any other error fails at once."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            value = await condition()
        except KafkaError as error:
            if not not_yet(error):
                raise
            value, last_error = None, error
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f" (last retriable error: {type(last_error).__name__}: {last_error})" if last_error else ""
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}{detail}")
        await asyncio.sleep(interval)


@contextlib.asynccontextmanager
async def statements_on(pool: Any) -> AsyncIterator[list[str]]:
    """The SQL statements that the connections of an asyncpg `pool` run inside the block (every one of its
    connections gets a query logger for the block's duration), without asyncpg's own type introspection (once
    per connection and type: `pg_catalog` lookups between `set_config('jit', ...)` calls)."""
    statements: list[str] = []

    def log(query: Any) -> None:
        if "pg_catalog" not in query.query and "'jit'" not in query.query:
            statements.append(query.query)

    async def each_connection(change: Callable[[Any], None]) -> None:
        connections = [await pool.acquire() for _ in range(pool.get_max_size())]
        try:
            for conn in connections:
                change(conn)
        finally:
            for conn in connections:
                await pool.release(conn)

    await each_connection(lambda conn: conn.add_query_logger(log))
    try:
        yield statements
    finally:
        await each_connection(lambda conn: conn.remove_query_logger(log))


def exported_metric_names() -> set[str]:
    """Every sample name the services export (counters with _total, histograms with _bucket...): what a
    dashboard, an alert rule or an autoscaler may query."""
    from prometheus_client import CollectorRegistry

    from assetbus.consumers.airflow.metrics import BridgeMetrics, ForwarderMetrics
    from assetbus.consumers.api.probes import ApiMetrics
    from assetbus.consumers.observe.pipeline import PipelineGauges
    from assetbus.consumers.observe.process_metrics import register_process_metrics
    from assetbus.consumers.persister import PersisterMetrics
    from assetbus.consumers.readiness import SubscriberMetrics
    from assetbus.consumers.scheduler.metrics import SchedulerMetrics
    from assetbus.producers.kafka import AccessRefusals, KafkaConnection
    from assetbus.schemas import Topics

    registries = [PersisterMetrics().registry, SchedulerMetrics().registry, SubscriberMetrics().registry,
                  ApiMetrics().registry, BridgeMetrics().registry, ForwarderMetrics().registry, CollectorRegistry()]
    PipelineGauges(KafkaConnection(bootstrap_servers="127.0.0.1:1"), Topics(), registries[-1])
    register_process_metrics(registries[-1], AccessRefusals())
    names: set[str] = set()
    for registry in registries:
        for family in registry.collect():
            names.add(family.name)
            for suffix in ("_total", "_bucket", "_count", "_sum", "_created"):
                names.add(family.name + suffix)
    return names


@dataclass(frozen=True)
class TaskScope:
    """Airflow's `airflow.state.TaskScope` (the same fields), for the state store backend where Airflow is not
    installed."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1


@dataclass(frozen=True)
class AssetScope:
    """Airflow's `airflow.state.AssetScope` (the same fields), for the state store backend without Airflow."""

    asset_id: int | None = None
    name: str | None = None
    uri: str | None = None
