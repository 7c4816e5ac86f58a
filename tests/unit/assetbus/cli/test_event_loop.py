"""The services' event loop: uvloop by default, the stdlib loop on request, a clear error otherwise."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from assetbus.cli.common import run
from assetbus.cli.event_loop import ENV, service_loop_factory


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_services_run_on_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert issubclass(run(_loop_type(), loop_factory=service_loop_factory()), uvloop.Loop)


def test_the_stdlib_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "asyncio")
    assert service_loop_factory() is None
    assert not issubclass(run(_loop_type(), loop_factory=service_loop_factory()), uvloop.Loop)


def test_an_unknown_loop_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "trio")
    with pytest.raises(ValueError, match="ASSETBUS_EVENT_LOOP must be 'uvloop' or 'asyncio'"):
        service_loop_factory()
