"""The event loop the services run on: uvloop, unless `ASSETBUS_EVENT_LOOP=asyncio` asks for the stdlib one.

uvloop costs less CPU per socket read and write and per callback than the stdlib selector loop
(docs/benchmarks.md, "Where the time goes"). Only the services (`assetbus run ...`) use it: the SDK runs
on whatever loop the task code has.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from assetbus.consumers.observe.logs import install_loop_handler

ENV = "ASSETBUS_EVENT_LOOP"
"""`uvloop` (the default) or `asyncio`."""


def service_loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's loop factory, or the stdlib loop's when asked for or when uvloop is not installed."""
    choice = os.environ.get(ENV, "uvloop").strip().lower()
    if choice not in ("uvloop", "asyncio"):
        raise ValueError(f"{ENV} must be 'uvloop' or 'asyncio', not {choice!r}")
    new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:  # pragma: no cover - a dependency of the assetbus distribution
            pass
        else:
            new_loop = uvloop.new_event_loop
    return lambda: install_loop_handler(new_loop())
