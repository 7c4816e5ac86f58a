"""What `infra up` started (``<home>/infra.json``), status types, and the probes that check them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import TypeAdapter

Progress = Callable[[str], None]

STATE_FILE = "infra.json"


@dataclass
class KafkaRecord:
    """The broker process `up` started."""

    pid: int
    version: str
    port: int
    controller_port: int


@dataclass
class NodeRecord:
    """One node of a local multi-node cluster: a combined KRaft broker+controller."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    secure_port: int | None = None


@dataclass
class ClusterRecord:
    """The local multi-node cluster `up --brokers N` started (``secure``: it has a SASL_SSL listener)."""

    version: str
    cluster_id: str
    nodes: list[NodeRecord]
    secure: bool = False


@dataclass
class PostgresRecord:
    """The local cluster `up` used; ``started`` means `down` may stop it. (A state file of an older assetbus
    also holds ``created`` and ``installed``, which nothing read: loading ignores them.)"""

    version: str
    cluster: str
    port: int
    started: bool = False


@dataclass
class InfraState:
    """Contents of ``<home>/infra.json``."""

    kafka: KafkaRecord | None = None
    postgres: PostgresRecord | None = None
    cluster: ClusterRecord | None = None

    @classmethod
    def load(cls, home: Path) -> InfraState:
        """Read the state file; a missing or unreadable file means nothing was started."""
        try:
            return TypeAdapter(cls).validate_json((home / STATE_FILE).read_bytes())
        except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
            return cls()

    def save(self, home: Path) -> None:
        """Write the state file atomically."""
        home.mkdir(parents=True, exist_ok=True)
        tmp = home / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, home / STATE_FILE)


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    managed: bool  # True: the local one run by this launcher; False: external (env var)
    running: bool
    address: str
    pid: int | None = None
    log_file: Path | None = None
    started_by_us: bool = False  # `down` stops it
    detail: str = ""


@dataclass(frozen=True)
class InfraStatus:
    kafka: ServiceStatus
    postgres: ServiceStatus
    kafka_nodes: tuple[ServiceStatus, ...] = ()
    """The nodes of a local multi-node cluster (`kafka` then sums them up); empty for one broker."""

    @property
    def running(self) -> bool:
        return self.kafka.running and self.postgres.running

    @property
    def services(self) -> tuple[ServiceStatus, ...]:
        """What a status table lists: each Kafka node (or the one broker), then PostgreSQL."""
        return (*(self.kafka_nodes or (self.kafka,)), self.postgres)


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int, cmdline_contains: tuple[str, ...] = ()) -> bool:
    """True when pid runs (not a zombie) and its command line holds every given string."""
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    except ChildProcessError:
        pass
    proc = Path("/proc") / str(pid)
    try:
        stat = (proc / "stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return False
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return False
    return all(part in cmdline for part in cmdline_contains)


def stop_pids(pids: list[int], timeout: float = 30.0) -> list[int]:
    """SIGTERM every process at once (a quorum that loses nodes one by one stalls the last ones' controlled
    shutdown), SIGKILL what is left after `timeout` and wait up to 10 s more; returns the pids that still run."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        for pid in [pid for pid in pids if pid_alive(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if wait_until(lambda: not any(pid_alive(pid) for pid in pids), wait, interval=0.2):
            break
    return [pid for pid in pids if pid_alive(pid)]


def find_pids(*cmdline_contains: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_alive(int(entry.name), cmdline_contains):
            found.append(int(entry.name))
    return sorted(found)


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.25) -> bool:
    """Poll check() until it is true or timeout seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def brokers_seen(host: str, port: int, timeout: float = 2.0) -> int:
    """How many brokers the Kafka broker on host:port lists in its metadata (0: no answer)."""
    client_id = b"assetbus-infra"
    # Metadata v4 (api key 3), correlation id 1, for no topics (just the brokers), no topic auto-creation
    request = struct.pack(">hhih", 3, 4, 1, len(client_id)) + client_id + struct.pack(">i?", 0, False)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock, sock.makefile("rb") as reader:
            sock.sendall(struct.pack(">i", len(request)) + request)
            size = struct.unpack(">i", reader.read(4))[0]
            if not 12 <= size <= 1 << 20:
                return 0  # not a Kafka broker
            correlation_id, _throttle, count = struct.unpack_from(">iii", reader.read(size))  # cut short: struct.error
            return int(count) if correlation_id == 1 else 0
    except (OSError, struct.error):
        return 0


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """'h1:9092,PLAINTEXT://h2:9093' -> [(h1, 9092), (h2, 9093)]."""
    result = []
    for item in servers.split(","):
        item = item.strip().rsplit("://", 1)[-1]
        host, _, port = item.rpartition(":")
        if host and port.isdigit():
            result.append((host.strip("[]"), int(port)))
    return result
