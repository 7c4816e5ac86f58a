"""`/metrics`, `/healthz` and `/readyz` over HTTP for a service without a web server of its own
(docs/metrics.md, "Where each service serves them"), served by prometheus-client's threaded WSGI server
in a daemon thread, so a busy or blocked event loop cannot delay a scrape; started from inside the
service's event loop, so that `/healthz` also proves the loop turns.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from assetbus.consumers.observe.readiness import ReadinessChecks
from assetbus.producers.kafka import KafkaConnection

log = logging.getLogger("assetbus.observe")

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class ProbeServer:
    """The three endpoints on one port; explicit lifecycle: `start()` / `stop()` (or `with`)."""

    def __init__(self, registry: CollectorRegistry, port: int, host: str = "0.0.0.0", *,
                 checks: ReadinessChecks | None = None, loop_timeout_s: float = 5.0) -> None:
        self._port = port
        self._host = host
        self._checks = checks
        self._loop_timeout_s = loop_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._metrics = make_wsgi_app(registry)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (port 0 binds any free one)."""
        return self._server.server_port if self._server is not None else self._port

    def start(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._server = make_server(self._host, self._port, self._app, ThreadingWSGIServer,
                                   handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="assetbus-probes", daemon=True)
        self._thread.start()
        log.info("probes served", extra={"url": f"http://{self._host}:{self.port}",
                                         "paths": "/metrics /healthz /readyz"})

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ProbeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":
            alive, detail = self._alive()
            return _json(start_response, 200 if alive else 503, {"status": "alive" if alive else "stuck",
                                                                  "detail": detail})
        if path == "/readyz":
            if self._checks is None:
                return _json(start_response, 200, {"status": "ready", "checks": {}})
            report = asyncio.run(self._checks.check())
            return _json(start_response, 200 if report.ready else 503, report.as_json())
        result: Iterable[bytes] = self._metrics(environ, start_response)
        return result

    def _alive(self) -> tuple[bool, str]:
        loop = self._loop
        if loop is None:
            return True, "serving"
        if loop.is_closed():
            return False, "the service's event loop is closed"
        try:
            asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(timeout=self._loop_timeout_s)
        except TimeoutError:
            return False, f"the service's event loop did not turn within {self._loop_timeout_s:g}s"
        except RuntimeError as error:
            return False, str(error)
        return True, "event loop turning"


def _json(start_response: StartResponse, status: int, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    reason = {200: "OK", 503: "Service Unavailable"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


class Registered(Protocol):
    """A service's metrics: what the probes serve on `/metrics`."""

    @property
    def registry(self) -> CollectorRegistry: ...


class ProbedService(Protocol):
    """The settings fields a service with probes has (`metrics_port`, `metrics_host`, its connections)."""

    @property
    def metrics_port(self) -> int | None: ...
    @property
    def metrics_host(self) -> str: ...
    @property
    def kafka(self) -> KafkaConnection: ...
    @property
    def database_url(self) -> str: ...

