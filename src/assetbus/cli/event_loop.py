"""The event loop the services run on: uvloop, unless `ASSETBUS_EVENT_LOOP=asyncio` asks for the stdlib one.

uvloop (libuv underneath) costs less CPU per socket read and write and per callback than the
stdlib selector loop; on two cores shared with Kafka and PostgreSQL that is latency (see
docs/benchmarks.md, "Where the time goes"). Only the services (`assetbus run ...`) use it: the
SDK runs on whatever loop the task code has.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

ENV = "ASSETBUS_EVENT_LOOP"
"""`uvloop` (the default) or `asyncio`."""


def service_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None (the stdlib loop) when asked for or when uvloop is not installed."""
    choice = os.environ.get(ENV, "uvloop").strip().lower()
    if choice == "asyncio":
        return None
    if choice != "uvloop":
        raise ValueError(f"{ENV} must be 'uvloop' or 'asyncio', not {choice!r}")
    try:
        import uvloop
    except ImportError:  # pragma: no cover - a dependency of the assetbus distribution
        return None
    return uvloop.new_event_loop
