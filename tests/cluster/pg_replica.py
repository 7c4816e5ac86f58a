"""A local PostgreSQL primary with one synchronous streaming standby, for failover tests.

Two throw-away clusters made with the installed PostgreSQL's own tools, run as the `postgres` user, on
ports of their own (never the shared cluster's): `initdb` for the primary, `pg_basebackup -R` for the
standby, streaming replication, `synchronous_standby_names` naming the standby and
`synchronous_commit=on`, so a commit returns only once the standby has flushed its WAL.

`ReplicaPair.up()` is idempotent (a pair that already streams in sync is kept; anything else in its
folder is replaced), `down()` stops both and removes the folder. Logins are trusted on 127.0.0.1:
a test pair, never a deployment. After `promote()` the new primary has no synchronous standby, so it
stops waiting for one (an HA manager does the same).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from assetbus.infra.errors import InfraError
from assetbus.infra.postgres import PG_LIB, as_postgres, installed_versions
from assetbus.infra.state import pid_alive, tcp_open, wait_until

__all__ = ["STANDBY_NAME", "ReplicaPair", "multi_host_url"]

HOST = "127.0.0.1"
STANDBY_NAME = "standby"
"""The standby's `application_name`, the one `synchronous_standby_names` names."""
READY_TIMEOUT = 30.0

PRIMARY_SETTINGS = {
    "listen_addresses": f"'{HOST}'",
    "wal_level": "replica",
    "max_wal_senders": "5",
    "hot_standby": "on",
    "synchronous_commit": "on",
    "shared_buffers": "32MB",
    "max_connections": "60",
}


def multi_host_url(ports: list[int], *, user: str, password: str, database: str) -> str:
    """A libpq-style URL naming every host, connecting only to the one that takes writes."""
    hosts = ",".join(f"{HOST}:{port}" for port in ports)
    return f"postgresql://{user}:{password}@{hosts}/{database}?target_session_attrs=read-write"


@dataclass
class Node:
    """One cluster of the pair: its data folder, port and log."""

    name: str
    data_dir: Path
    port: int

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    def pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def running(self) -> bool:
        pid = self.pid()
        return pid is not None and pid_alive(pid) and tcp_open(HOST, self.port)


@dataclass
class ReplicaPair:
    """Primary on `primary_port`, synchronous standby on `standby_port`, under `root` (a fresh temp folder)."""

    primary_port: int
    standby_port: int
    root: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "assetbus-pg-ha")
    version: str = ""

    def __post_init__(self) -> None:
        if not self.version:
            versions = installed_versions()
            if not versions:
                raise InfraError("No PostgreSQL server is installed; run `apt-get install -y postgresql`.")
            self.version = versions[-1]
        self.primary = Node("primary", self.root / "primary", self.primary_port)
        self.standby = Node("standby", self.root / "standby", self.standby_port)

    # -- commands ---------------------------------------------------------------------------------------
    def _bin(self, program: str) -> str:
        return str(PG_LIB / self.version / "bin" / program)

    def _run(self, *command: str, what: str) -> str:
        out = subprocess.run(as_postgres(list(command)), capture_output=True, text=True, cwd="/", check=False)
        if out.returncode != 0:
            raise InfraError(f"{what} failed: {(out.stderr or out.stdout).strip()[-400:]}")
        return out.stdout.strip()

    def sql(self, node: Node, statement: str) -> str:
        """One statement as the superuser over the node's Unix socket (in the pair's folder)."""
        return self._run(self._bin("psql"), "-h", str(self.root), "-p", str(node.port), "-X", "-q", "-v",
                         "ON_ERROR_STOP=1", "-d", "postgres", "-tAc", statement, what=f"SQL on the {node.name}")

    def _start(self, node: Node) -> None:
        options = f"-p {node.port} -k {self.root}"
        self._run(self._bin("pg_ctl"), "-D", str(node.data_dir), "-l", str(node.log_file), "-o", options, "-w",
                  "-t", str(int(READY_TIMEOUT)), "start", what=f"starting the {node.name} (see {node.log_file})")

    # -- lifecycle --------------------------------------------------------------------------------------
    def in_sync(self) -> bool:
        """The standby streams from the primary and is its synchronous standby."""
        if not (self.primary.running() and self.standby.running()):
            return False
        try:
            state = self.sql(self.primary, "SELECT state || '/' || sync_state FROM pg_stat_replication "
                                           f"WHERE application_name = '{STANDBY_NAME}'")
        except InfraError:
            return False
        return state == "streaming/sync"

    def up(self) -> None:
        """Make the pair run (primary, standby in synchronous streaming replication); seconds."""
        if self.in_sync():
            return
        self.down()
        for port in (self.primary_port, self.standby_port):
            if tcp_open(HOST, port):
                raise InfraError(f"Port {port} is in use by another process; choose other ports for the pair.")
        self.root.mkdir(parents=True)
        shutil.chown(self.root, "postgres", "postgres")
        self._run(self._bin("initdb"), "-D", str(self.primary.data_dir), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C", what="initdb of the primary")
        with (self.primary.data_dir / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in PRIMARY_SETTINGS.items())
        self._start(self.primary)
        conninfo = f"host={HOST} port={self.primary_port} user=postgres application_name={STANDBY_NAME}"
        self._run(self._bin("pg_basebackup"), "-D", str(self.standby.data_dir), "-d", conninfo, "-R",
                  "-X", "stream", "-c", "fast", "--no-sync", what="pg_basebackup of the standby")
        self._start(self.standby)
        # Named only now, on the primary alone: a standby that inherited it would wait for itself once promoted.
        self.sql(self.primary, f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
        self.sql(self.primary, "SELECT pg_reload_conf()")
        if not wait_until(self.in_sync, READY_TIMEOUT, 0.1):
            raise InfraError(f"The standby did not become synchronous; see {self.standby.log_file}.")

    def create_database(self, user: str, password: str, database: str) -> None:
        """A login role and its database on the primary (replicated to the standby)."""
        self.sql(self.primary, f"CREATE ROLE \"{user}\" LOGIN CREATEDB PASSWORD '{password}'")
        self.sql(self.primary, f"CREATE DATABASE \"{database}\" OWNER \"{user}\"")

    def crash_primary(self) -> None:
        """kill -9 of the primary's postmaster, then of whatever of it still runs (a lost machine)."""
        pid = self.primary.pid()
        if pid is None:
            raise InfraError("The primary does not run.")
        children = _children(pid)
        os.kill(pid, signal.SIGKILL)
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not wait_until(lambda: not any(pid_alive(p) for p in (pid, *children)), 10.0, 0.02):
            raise InfraError(f"The primary (pid {pid}) survived kill -9.")

    def stop_standby(self) -> None:
        """Stop the standby (fast shutdown): the primary's commits then wait for it."""
        self._run(self._bin("pg_ctl"), "-D", str(self.standby.data_dir), "-m", "fast", "-w", "stop",
                  what="stopping the standby")

    def start_standby(self) -> None:
        """Start the standby again and wait until it streams in sync (the waiting commits then return)."""
        self._start(self.standby)
        if not wait_until(self.in_sync, READY_TIMEOUT, 0.1):
            raise InfraError(f"The standby did not become synchronous again; see {self.standby.log_file}.")

    def promote(self) -> None:
        """Promote the standby and let it commit without waiting for a standby of its own."""
        self._run(self._bin("pg_ctl"), "-D", str(self.standby.data_dir), "-w", "-t", str(int(READY_TIMEOUT)),
                  "promote", what="promoting the standby")
        self.sql(self.standby, "ALTER SYSTEM SET synchronous_standby_names = ''")
        self.sql(self.standby, "SELECT pg_reload_conf()")

    def down(self) -> None:
        """Stop both clusters (immediate) and remove the pair's folder."""
        for node in (self.standby, self.primary):
            pid = node.pid()
            if pid is not None and pid_alive(pid):
                subprocess.run(as_postgres([self._bin("pg_ctl"), "-D", str(node.data_dir), "-m", "immediate",
                                            "-w", "stop"]), capture_output=True, cwd="/", check=False)
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def _children(pid: int) -> list[int]:
    """The direct children of a process (the postmaster's backends and auxiliary processes)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return found
