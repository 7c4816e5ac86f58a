"""A warm `assetbus` CLI for the guides: the same typer app, imported once, forked per command.

Importing what an `assetbus` command needs costs up to 3 s of CPU (typer, rich, SQLAlchemy, aiokafka,
FastAPI, ...); the guides run dozens of `assetbus` commands on 2 shared cores. `WarmCli` starts one server process that
imports `assetbus.cli.main` and listens on a Unix socket; `client.py` (stdlib only, started with
`python -S`) hands it its argv, environment, working directory and stdin/stdout/stderr, and the
server forks a child that runs `main()` exactly as the console script does. The client forwards
SIGINT/SIGTERM/SIGHUP to that child and exits with its exit code, so `&`, `$!`, `kill` and `$?`
behave as with the real script. A child whose client went away terminates itself.

`ASSETBUS_DOCS_COLD_CLI=1` makes the guides use the real `.venv/bin/assetbus` instead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

CLIENT = Path(__file__).with_name("client.py")
PRELOAD = ("assetbus.cli.main", "assetbus.cli.services", "assetbus.settings", "assetbus.consumers.scheduler",
           "assetbus.consumers.persister", "assetbus.consumers.observe",
           "assetbus.producers", "uvicorn")
"""Imported once by the server, every name of a package's `__all__` included (the packages export lazily)."""


class WarmCli:
    """The server process; `alias()` is the shell line that routes `assetbus` to it."""

    def __init__(self, socket_path: Path, log_path: Path, env: dict[str, str]) -> None:
        self.env = env  # modules that read the environment at import time see this one
        self.socket_path = socket_path
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120.0) -> None:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen([sys.executable, __file__, str(self.socket_path)], stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env)
        deadline = time.monotonic() + timeout_s
        while not self.socket_path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the warm CLI did not start: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # the server terminates the children still running
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def alias(self) -> str:
        return (f"export ASSETBUS_DOCS_CLI_SOCKET={self.socket_path}\n"
                f"shopt -s expand_aliases\nalias assetbus='{sys.executable} -S {CLIENT}'\n")

    def __enter__(self) -> WarmCli:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- the server side (this file run as a script) ---------------------------------------------------


def _watch_client(conn: socket.socket) -> None:
    """Terminate this command when its client is gone (killed with -9, say): nothing is left behind."""
    while conn.recv(16):
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(20)
    os.kill(os.getpid(), signal.SIGKILL)


def _run_command(conn: socket.socket) -> None:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(data)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["assetbus", *request["argv"]]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    conn.sendall(str(os.getpid()).encode())
    threading.Thread(target=_watch_client, args=(conn,), daemon=True).start()
    code = 0
    try:
        from assetbus.cli.main import main

        main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        conn.sendall(str(code).encode())
    finally:
        os._exit(code)


def serve(path: str) -> None:
    import importlib

    for module in PRELOAD:
        loaded = importlib.import_module(module)
        for name in getattr(loaded, "__all__", ()):
            getattr(loaded, name)
    children: set[int] = set()

    def reap(*_: object) -> None:
        for pid in list(children):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                children.discard(pid)

    def stop(*_: object) -> None:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        os._exit(0)

    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGTERM, stop)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)
    while True:
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            _run_command(conn)
        children.add(pid)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
