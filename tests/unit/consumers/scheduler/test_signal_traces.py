"""A readiness signal's trace: a child of its run's first traced event, linked to the others (fresh interpreter:
OpenTelemetry allows one TracerProvider per process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    from types import SimpleNamespace

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from assetbus.consumers.scheduler.publish import ReadinessPublisher
    from assetbus.schemas import Topics

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    def event_context(trace_id, span_id):
        return trace.set_span_in_context(NonRecordingSpan(SpanContext(trace_id, span_id, True, TraceFlags(1))))

    publisher = ReadinessPublisher(None, None, Topics(), None)
    joined = SimpleNamespace(id=1, events=[{"event_id": 10}, {"event_id": 11}, {"event_id": 12}])
    untraced = SimpleNamespace(id=2, events=[{"event_id": 13}])
    publisher.note_traces([joined, untraced], {11: event_context(0xA1, 0xB1), 12: event_context(0xA2, 0xB2)})
    headers = publisher.signal_headers(joined)
    (span,) = exporter.get_finished_spans()
    print(span.name, hex(span.parent.trace_id), hex(span.parent.span_id),
          [(hex(link.context.trace_id), hex(link.context.span_id)) for link in span.links])
    print(headers[0][1].decode().split("-")[1:3] == [f"{0xA1:032x}", f"{span.context.span_id:016x}"])
    print(publisher.signal_headers(joined), publisher.signal_headers(untraced))
""")


def test_a_run_of_several_traced_events_is_a_child_of_the_first_and_links_the_others() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["assetbus signal 0xa1 0xb1 [('0xa2', '0xb2')]", "True", "() ()"]
