"""How `assetbus run api` serves the app: uvicorn with the configured loop and parser, one or more workers.
With `workers > 1` the parent binds the socket, forks the workers (each builds its own app) and passes them
SIGTERM/SIGINT; their request metrics are summed through prometheus-client's multiprocess mode (docs/metrics.md,
"The API under `--workers N`").
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import uvicorn
from starlette.types import ASGIApp

from assetbus.consumers.api.config import ApiConfig

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The directory of the multiprocess mode, or None (one process: its own counters)."""
    return os.environ.get(MULTIPROCESS_ENV) or None


def prepare_multiprocess(workers: int) -> str | None:
    """Before the workers start: for `workers > 1`, the directory set (a fresh one if unset) and emptied (files
    of an earlier run would be summed too)."""
    if workers <= 1:
        return multiprocess_dir()
    path = Path(multiprocess_dir() or tempfile.mkdtemp(prefix="assetbus-api-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROCESS_ENV] = str(path)
    if "prometheus_client.values" in sys.modules:  # imported already: new metrics must write to the directory
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    return str(path)


class _Server(uvicorn.Server):
    """uvicorn's server, except that a stop by SIGTERM or SIGINT is a clean stop: the process exits 0, as every
    assetbus service does (uvicorn re-raises the signal once it has shut down, which makes the exit code 143)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()


def uvicorn_config(app: ASGIApp | None, config: ApiConfig, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(app or _no_app, host=config.host, port=config.port, loop=config.loop, http=config.http,
                          access_log=config.access_log, backlog=config.backlog, log_level=log_level.lower(),
                          lifespan="on", log_config=None)


async def _no_app(scope: object, receive: object, send: object) -> None:  # pragma: no cover - only binds
    raise RuntimeError("the parent process of the API workers serves nothing")


def serve(build_app: Callable[[int], ASGIApp], config: ApiConfig, log_level: str) -> int:
    """Serve until stopped; the exit code. `build_app(i)` makes worker i's app (in the worker)."""
    if config.workers == 1:
        server = _Server(uvicorn_config(build_app(0), config, log_level))
        server.run()
        return 0 if server.started else 1
    sock = uvicorn_config(None, config, log_level).bind_socket()
    children: list[int] = []
    for index in range(config.workers):
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                server = _Server(uvicorn_config(build_app(index), config, log_level))
                server.run(sockets=[sock])
                code = 0 if server.started else 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    sock.close()
    return _supervise(children)


def _supervise(children: list[int]) -> int:
    running = set(children)
    stopping = False

    def forward(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = 0
    while running:
        pid, status = os.wait()
        running.discard(pid)
        exited = os.waitstatus_to_exitcode(status)
        if stopping and exited in (-signal.SIGTERM, -signal.SIGINT):
            exited = 0  # uvicorn re-raises the signal it stopped on once it has shut down
        if exited != 0 and code == 0:
            code = exited if exited > 0 else 1
            forward(signal.SIGTERM, None)  # one worker gone: stop the rest, let the supervisor restart the service
    return code
