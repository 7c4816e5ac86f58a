"""Trace context in record headers: what goes on a record, what comes back off it, and the no-SDK path."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from assetbus.producers.tracing import TRACEPARENT, context_of, headers_of, traceparent_of

PARENT = SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0xB7AD6B7169203331, is_remote=True,
                     trace_flags=TraceFlags(TraceFlags.SAMPLED))
PARENT_HEADER = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_no_current_span_gives_no_headers() -> None:
    assert headers_of() == ()


def test_a_context_becomes_a_traceparent_header_and_back() -> None:
    context = trace.set_span_in_context(NonRecordingSpan(PARENT))
    headers = headers_of(context)
    assert headers == ((TRACEPARENT, PARENT_HEADER),)
    back = context_of([("other", b"x"), *headers])
    assert back is not None
    assert trace.get_current_span(back).get_span_context().span_id == PARENT.span_id
    assert traceparent_of(headers) == PARENT_HEADER.decode()


def test_records_without_a_valid_traceparent_carry_no_context() -> None:
    assert context_of(None) is None
    assert context_of([("assetbus.dlq.reason", b"not_json")]) is None
    assert context_of([(TRACEPARENT, b"not-a-traceparent")]) is None
    assert traceparent_of([("tracestate", b"a=b")]) is None


def test_a_span_from_a_configured_provider_is_a_child_of_its_parent() -> None:
    tracer = TracerProvider().get_tracer("test")
    parent = trace.set_span_in_context(NonRecordingSpan(PARENT))
    with tracer.start_as_current_span("child", parent) as child:
        headers = headers_of()
    assert child.get_span_context().trace_id == PARENT.trace_id
    assert headers[0][1].startswith(b"00-0af7651916cd43dd8448eb211c80319c-")
    assert headers[0][1] != PARENT_HEADER


def test_without_an_sdk_a_span_passes_its_parent_context_through() -> None:
    # in a fresh interpreter: no TracerProvider can have been installed by another test
    script = textwrap.dedent(f"""
        from opentelemetry import trace
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
        from assetbus.producers.tracing import span_headers
        parent = SpanContext({PARENT.trace_id}, {PARENT.span_id}, True, TraceFlags(1))
        inside = trace.set_span_in_context(NonRecordingSpan(parent))
        print(span_headers("assetbus emit"), span_headers("assetbus emit", inside))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"() (('traceparent', {PARENT_HEADER!r}),)"


def test_with_an_sdk_span_headers_name_a_new_span_in_the_parents_trace() -> None:
    script = textwrap.dedent(f"""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
        from assetbus.producers.tracing import span_headers
        trace.set_tracer_provider(TracerProvider())
        parent = SpanContext({PARENT.trace_id}, {PARENT.span_id}, True, TraceFlags(1))
        print(span_headers("assetbus store", trace.set_span_in_context(NonRecordingSpan(parent)))[0][1].decode())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    version, trace_id, span_id, _ = out.split("-")
    assert (version, trace_id) == ("00", f"{PARENT.trace_id:032x}")
    assert span_id != f"{PARENT.span_id:016x}"
