"""The services' event loop: uvloop by default, the stdlib loop on request, a clear error otherwise."""

from __future__ import annotations

import asyncio
import logging

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


CLOSED = RuntimeError("unable to perform operation on <TCPTransport closed=True reading=False 0x1>; "
                      "the handler is closed")


async def _report(context: dict[str, object]) -> None:
    loop = asyncio.get_running_loop()
    loop.call_exception_handler(context)


def test_a_write_to_a_closed_tls_transport_is_one_debug_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(ENV, raising=False)
    caplog.set_level(logging.DEBUG)
    run(_report({"message": "Fatal error on SSL protocol", "exception": CLOSED}), loop_factory=service_loop_factory())
    assert not [r for r in caplog.records if r.name == "asyncio"]
    assert [r.levelno for r in caplog.records if r.name == "assetbus.loop"] == [logging.DEBUG]


def test_every_other_loop_error_is_reported_as_before(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(ENV, raising=False)
    other = RuntimeError("something else broke")
    run(_report({"message": "Fatal error on SSL protocol", "exception": other}), loop_factory=service_loop_factory())
    (record,) = [r for r in caplog.records if r.name == "asyncio"]
    assert record.levelno == logging.ERROR and record.exc_info is not None and record.exc_info[1] is other
