"""The event loop the services run on: uvloop, unless `ASSETBUS_EVENT_LOOP=asyncio` asks for the stdlib one.

uvloop (libuv underneath) costs less CPU per socket read and write and per callback than the
stdlib selector loop; on two cores shared with Kafka and PostgreSQL that is latency (see
docs/benchmarks.md, "Where the time goes"). Only the services (`assetbus run ...`) use it: the
SDK runs on whatever loop the task code has.

uvloop's SSL protocol can write to a TCP transport that is already closed when a TLS connection is
torn down mid-handshake (a refused SASL login, a broker closing the socket): the write raises
`RuntimeError: ... the handler is closed` and uvloop reports it as a "Fatal error on SSL protocol"
with a traceback (MagicStack/uvloop issues #68, #471). The connection was already gone, so nothing
is lost; the services log it as one debug line instead, and every other loop error as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

ENV = "ASSETBUS_EVENT_LOOP"
"""`uvloop` (the default) or `asyncio`."""

log = logging.getLogger("assetbus.loop")


def closed_transport_write(context: dict[str, Any]) -> bool:
    """Whether a loop error is uvloop's write to an SSL connection's already closed TCP transport."""
    error = context.get("exception")
    return (isinstance(error, RuntimeError) and "the handler is closed" in str(error)
            and "SSL" in str(context.get("message", "")))


def _handle_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if closed_transport_write(context):
        log.debug("a TLS connection was closed while uvloop still wrote to it: %s", context.get("exception"))
        return
    loop.default_exception_handler(context)


def _uvloop() -> asyncio.AbstractEventLoop:
    import uvloop

    loop = uvloop.new_event_loop()
    loop.set_exception_handler(_handle_loop_error)
    return loop


def service_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None (the stdlib loop) when asked for or when uvloop is not installed."""
    choice = os.environ.get(ENV, "uvloop").strip().lower()
    if choice == "asyncio":
        return None
    if choice != "uvloop":
        raise ValueError(f"{ENV} must be 'uvloop' or 'asyncio', not {choice!r}")
    try:
        import uvloop  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency of the assetbus distribution
        return None
    return _uvloop
