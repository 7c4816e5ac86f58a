"""One trace through the pipeline, against the real broker and database: emit → stored → signalled → handled.

An OpenTelemetry SDK with an in-memory exporter records the spans of this process: the emitter, the
persister, the scheduler and the readiness subscriber all run here, and talk only through Kafka.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.dagruns import run_conf
from assetbus.consumers.persister import Persister
from assetbus.consumers.readiness import DatabaseLedger, ReadinessSubscriber
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Scheduler
from assetbus.consumers.storage import register_asset
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
DAG = ConsumerDag(dag_id="traced", schedule=AssetWait("orders"))

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's spans, from a TracerProvider installed once (OpenTelemetry allows one per process)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
async def emitter(infra: Settings, topics: Topics, token_secret: str, persister: Persister, engine: AsyncEngine,
                  scheduler: Scheduler,
                  define_dags: Callable[..., Awaitable[object]]) -> AsyncIterator[AsyncEmitter]:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)
    await define_dags(DAG)
    token = task_token(token_secret, "ingest", "run-1", "load")
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as running:
        yield running


def _named(exported: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [s for s in exported.get_finished_spans() if s.name == name]
    return span


async def test_one_trace_spans_emit_stored_signalled_and_handled(
        infra: Settings, topics: Topics, db_url: str, emitter: AsyncEmitter,
        spans: InMemorySpanExporter) -> None:
    seen: list[tuple[SpanContext, dict[str, object]]] = []

    async def handle(signal: ReadinessSignal) -> None:
        seen.append((trace.get_current_span().get_span_context(), run_conf(signal)))

    subscriber = ReadinessSubscriber(infra.bootstrap_servers, DAG.dag_id, handle, group_id=f"{topics.prefix}-workers",
                                     ledger=DatabaseLedger(db_url), topics=topics)
    async with subscriber:
        with trace.get_tracer("a task").start_as_current_span("task") as task:
            await emitter.emit(ORDERS, partition_key="batch-41", dedupe_key="batch-41")

        async def handled() -> bool:
            return any(s.name == "assetbus handle" for s in spans.get_finished_spans())

        await wait_for(handled, what="the handler's span")

    root = task.get_span_context()
    chain = [_named(spans, name) for name in ("assetbus emit", "assetbus store", "assetbus signal", "assetbus handle")]
    assert {span.context.trace_id for span in chain} == {root.trace_id}
    parents = [span.parent.span_id if span.parent else None for span in chain]
    assert parents == [root.span_id, *(span.context.span_id for span in chain[:-1])]
    (current, conf), = seen
    handle_span = chain[-1].context
    assert (current.trace_id, current.span_id) == (handle_span.trace_id, handle_span.span_id)
    flags = int(handle_span.trace_flags)
    assert conf["traceparent"] == f"00-{handle_span.trace_id:032x}-{handle_span.span_id:016x}-{flags:02x}"
