"""The services' event loop: uvloop by default, the stdlib loop on request, a clear error otherwise; either
reports a failed TLS connection once, never again as an asyncio traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import ssl
from collections.abc import Iterator

import pytest
import uvloop

from assetbus.cli.common import run
from assetbus.cli.event_loop import ENV, service_loop_factory
from tests.untrusted_tls import UntrustedServer, untrusted_tls_server


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_services_run_on_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert issubclass(run(_loop_type(), loop_factory=service_loop_factory()), uvloop.Loop)


def test_the_stdlib_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "asyncio")
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


LOOPS = ["uvloop", "asyncio"]


def test_a_write_to_a_closed_tls_transport_is_one_debug_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(ENV, raising=False)
    caplog.set_level(logging.DEBUG)
    run(_report({"message": "Fatal error on SSL protocol", "exception": CLOSED}), loop_factory=service_loop_factory())
    assert not [r for r in caplog.records if r.name == "asyncio"]
    assert [r.levelno for r in caplog.records if r.name == "assetbus.loop"] == [logging.DEBUG]


@pytest.mark.parametrize("loop", LOOPS)
def test_every_other_loop_error_is_reported_as_before(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture, loop: str) -> None:
    monkeypatch.setenv(ENV, loop)
    other = RuntimeError("something else broke")
    run(_report({"message": "Fatal error on SSL protocol", "exception": other}), loop_factory=service_loop_factory())
    (record,) = [r for r in caplog.records if r.name == "asyncio"]
    assert record.levelno == logging.ERROR and record.exc_info is not None and record.exc_info[1] is other


@pytest.fixture(scope="module")
def untrusted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UntrustedServer]:
    with untrusted_tls_server(tmp_path_factory.mktemp("tls")) as server:
        yield server


async def _handshake_left_in_a_future(server: UntrustedServer) -> ssl.SSLCertVerificationError:
    """A real failed handshake (the server's certificate is not trusted), its exception then left in a loop
    future that nobody awaits, as uvloop's `create_connection` leaves it: freed, asyncio reports it."""
    loop = asyncio.get_running_loop()
    with pytest.raises(ssl.SSLCertVerificationError) as raised:
        await asyncio.open_connection("127.0.0.1", server.port, ssl=server.client_context())
    waiter = loop.create_future()
    waiter.set_exception(raised.value)
    del waiter
    gc.collect()
    return raised.value


@pytest.mark.parametrize("loop", LOOPS)
def test_a_failed_handshake_left_in_an_unawaited_future_is_one_debug_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, untrusted: UntrustedServer,
        loop: str) -> None:
    monkeypatch.setenv(ENV, loop)
    caplog.set_level(logging.DEBUG)
    error = run(_handshake_left_in_a_future(untrusted), loop_factory=service_loop_factory())
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.WARNING]
    (line,) = [r for r in caplog.records if r.name == "assetbus.loop"]
    assert line.levelno == logging.DEBUG and line.exc_info is None
    said = line.getMessage()
    assert "Future exception was never retrieved" in said and "SSLCertVerificationError" in said

