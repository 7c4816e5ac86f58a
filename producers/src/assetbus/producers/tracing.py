"""OpenTelemetry context in Kafka record headers (W3C `traceparent`, plus `tracestate` when set): the spans and
headers of each stage are tabled in docs/operations.md, "Traces". Only the `opentelemetry-api` package is needed:
without an SDK configured its tracer is a no-op, spans cost next to nothing and the headers carry the caller's
context unchanged (none when there is none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["TRACEPARENT", "Header", "context_of", "headers_of", "span_headers", "traceparent_of", "tracer"]

Header = tuple[str, bytes]
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
_NAMES = (TRACEPARENT, TRACESTATE)

tracer = trace.get_tracer("assetbus")
_propagator = TraceContextTextMapPropagator()


def headers_of(context: Context | None = None) -> tuple[Header, ...]:
    """The W3C headers of `context` (the current one by default); empty when it holds no valid span."""
    if not trace.get_current_span(context).get_span_context().is_valid:
        return ()
    carrier: dict[str, str] = {}
    _propagator.inject(carrier, context)
    return tuple((name, carrier[name].encode()) for name in _NAMES if name in carrier)


def context_of(headers: Iterable[tuple[str, bytes]] | None) -> Context | None:
    """The context a record's headers carry, or None when they carry none."""
    carrier = {name: value.decode("latin-1") for name, value in headers or () if name in _NAMES}
    if TRACEPARENT not in carrier:
        return None
    context = _propagator.extract(carrier)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def traceparent_of(headers: Iterable[tuple[str, bytes]] | None) -> str | None:
    """The `traceparent` header's text, if the record has one."""
    for name, value in headers or ():
        if name == TRACEPARENT:
            return value.decode("latin-1")
    return None


def span_headers(name: str, parent: Context | None = None, *, links: Sequence[Context] = ()) -> tuple[Header, ...]:
    """Open and end one producer span (a child of `parent`, else of the current span); the headers of its context.

    With no SDK configured the span is the no-op one and the headers are those of the parent.
    """
    span_links = [Link(trace.get_current_span(c).get_span_context()) for c in links]
    span = tracer.start_span(name, parent, kind=SpanKind.PRODUCER, links=span_links or None)
    span.end()
    if not span.get_span_context().is_valid:
        return ()
    return headers_of(trace.set_span_in_context(span))
