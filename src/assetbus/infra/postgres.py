"""The local PostgreSQL: Debian's cluster tools (pg_lsclusters, pg_ctlcluster), or DATABASE_URL."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.infra.errors import InfraError
from assetbus.infra.state import PostgresRecord, Progress, ServiceStatus, tcp_open, wait_until
from assetbus.producers.kafka.periodic import run_async
from assetbus.settings import InfraSettings

HOST = "127.0.0.1"
READY_TIMEOUT = 30.0
PG_LIB = Path("/usr/lib/postgresql")
"""Debian's per-version binaries: `/usr/lib/postgresql/<version>/bin`."""


@dataclass(frozen=True)
class Cluster:
    """One row of `pg_lsclusters`."""

    version: str
    name: str
    port: int
    online: bool
    data_dir: Path
    log_file: Path | None

    @property
    def label(self) -> str:
        return f"{self.version}/{self.name}"

    def pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


def parse_clusters(text: str) -> list[Cluster]:
    clusters = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or not fields[2].isdigit():
            continue
        log = Path(fields[6]) if len(fields) > 6 else None
        clusters.append(Cluster(fields[0], fields[1], int(fields[2]), fields[3].startswith("online"), Path(fields[5]),
                                log))
    return clusters


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def pick_cluster(clusters: list[Cluster], port: int) -> Cluster | None:
    """The newest cluster on the wanted port."""
    matching = [c for c in clusters if c.port == port]
    return max(matching, key=lambda c: (_version_key(c.version), c.name == "main"), default=None)


def list_clusters() -> list[Cluster]:
    out = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=False)
    return parse_clusters(out.stdout)


def installed_versions() -> list[str]:
    """PostgreSQL server versions under /usr/lib/postgresql, newest last."""
    found = [p.name for p in PG_LIB.iterdir() if (p / "bin" / "postgres").exists()] if PG_LIB.is_dir() else []
    return sorted(found, key=_version_key)


def try_connect(dsn: str, timeout: float = 5.0) -> str | None:
    """None when a connection and `SELECT 1` work, else the reason."""

    async def probe() -> None:
        conn = await asyncpg.connect(asyncpg_dsn(dsn), timeout=timeout)
        try:
            await conn.fetchval("SELECT 1")
        finally:
            await conn.close()

    try:
        run_async(probe())
    except (OSError, TimeoutError, ValueError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        return str(exc) or type(exc).__name__
    return None


def install_postgresql(home: Path, progress: Progress) -> None:
    """Install Debian's `postgresql` package (needs root and apt-get)."""
    apt = shutil.which("apt-get")
    if apt is None:
        raise InfraError("PostgreSQL is not installed and apt-get is missing; install PostgreSQL or set DATABASE_URL.")
    if os.geteuid() != 0:
        raise InfraError("PostgreSQL is not installed; run `apt-get install -y postgresql` as root or set "
                         "DATABASE_URL.")
    progress("Installing PostgreSQL (apt-get install postgresql)…")
    log = home / "logs" / "apt-postgresql.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with log.open("wb") as out:
        for command in ([apt, "update"], [apt, "install", "-y", "postgresql"]):
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode:
                raise InfraError(f"`{' '.join(command[1:])}` failed; see {log}, or set DATABASE_URL.")
    if shutil.which("pg_ctlcluster") is None:
        raise InfraError(f"PostgreSQL was installed but pg_ctlcluster is missing; see {log}.")


def as_postgres(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return ["sudo", "-n", "-u", "postgres", "--", *command]


def psql_command(cluster: Cluster, sql: str) -> list[str]:
    """psql of the cluster's own version, on the cluster's port over the Unix socket.

    Not `psql --cluster`: that option is known only to Debian's wrapper (`/usr/bin/psql`), and a PATH
    that starts with `/usr/lib/postgresql/<version>/bin` finds the real psql, which refuses it.
    """
    binary = PG_LIB / cluster.version / "bin" / "psql"
    program = str(binary) if binary.is_file() else "psql"
    return [program, "-p", str(cluster.port), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-tAc", sql]


def psql(cluster: Cluster, sql: str) -> str:
    """Run one SQL command as the postgres superuser over the cluster's Unix socket."""
    out = subprocess.run(as_postgres(psql_command(cluster, sql)), capture_output=True, text=True, cwd="/",
                         check=False)
    if out.returncode != 0:
        reason = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "psql failed"
        raise InfraError(f"Setting up the role in PostgreSQL {cluster.label} failed ({reason}).")
    return out.stdout.strip()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def ensure_role_and_database(infra: InfraSettings, cluster: Cluster) -> None:
    """Create (or update) the login role and its database, idempotently."""
    role, password = _ident(infra.pg_user), _literal(infra.pg_password)
    psql(cluster, f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {_literal(infra.pg_user)}) "
                  f"THEN CREATE ROLE {role} LOGIN CREATEDB PASSWORD {password}; "
                  f"ELSE ALTER ROLE {role} LOGIN CREATEDB PASSWORD {password}; END IF; END $$;")
    # Lets the role drop its own scratch databases WITH (FORCE) even while autovacuum visits them.
    psql(cluster, f"GRANT pg_signal_backend TO {role}")
    if not psql(cluster, f"SELECT 1 FROM pg_database WHERE datname = {_literal(infra.pg_database)}"):
        psql(cluster, f"CREATE DATABASE {_ident(infra.pg_database)} OWNER {role}")


def _port_busy(port: int) -> InfraError:
    return InfraError(f"Port {port} is in use by another process; set ASSETBUS_PG_PORT or stop that process.")


def _create_cluster(port: int, progress: Progress) -> Cluster:
    versions = installed_versions()
    if not versions:
        raise InfraError("No PostgreSQL server is installed; run `apt-get install -y postgresql`.")
    if tcp_open(HOST, port):
        raise _port_busy(port)
    taken = {c.name for c in list_clusters() if c.version == versions[-1]}
    name = "assetbus" if "main" in taken else "main"
    progress(f"Creating PostgreSQL cluster {versions[-1]}/{name} on port {port}…")
    command = ["pg_createcluster", versions[-1], name, "--port", str(port)]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    cluster = pick_cluster(list_clusters(), port)
    if out.returncode != 0 or cluster is None:
        raise InfraError(f"pg_createcluster failed ({out.stderr.strip()[-200:]}); set DATABASE_URL instead.")
    return cluster


def _start_cluster(cluster: Cluster, progress: Progress) -> None:
    if tcp_open(HOST, cluster.port):
        raise _port_busy(cluster.port)
    progress(f"Starting PostgreSQL {cluster.label}…")
    command = ["pg_ctlcluster", cluster.version, cluster.name, "start"]
    if subprocess.run(command, capture_output=True, check=False).returncode != 0:
        raise InfraError(f"PostgreSQL {cluster.label} did not start; see {cluster.log_file}.")


def _ensure_login(infra: InfraSettings, cluster: Cluster, dsn: str, progress: Progress) -> None:
    ready = ["pg_isready", "-q", "-h", HOST, "-p", str(cluster.port)]
    if not wait_until(lambda: subprocess.run(ready, check=False).returncode == 0, READY_TIMEOUT, 0.3):
        raise InfraError(f"PostgreSQL {cluster.label} refuses connections on {HOST}:{cluster.port}; "
                         f"check listen_addresses and {cluster.log_file}.")
    if try_connect(dsn) is None:
        return
    progress(f"Creating role and database {infra.pg_database!r} in PostgreSQL {cluster.label}…")
    ensure_role_and_database(infra, cluster)
    reason = try_connect(dsn)
    if reason is not None:
        raise InfraError(f"Cannot log in to {HOST}:{cluster.port} as {infra.pg_user} ({reason}); "
                         "allow password logins from 127.0.0.1 in pg_hba.conf.")


def up(infra: InfraSettings, dsn: str, record: PostgresRecord | None, progress: Progress) -> PostgresRecord:
    """Make the local cluster run on 127.0.0.1:<pg_port> with the role and database; returns the record."""
    started = False
    if shutil.which("pg_ctlcluster") is None:
        install_postgresql(infra.home.expanduser().resolve(), progress)
        started = True  # the package's install may have started it
    cluster = pick_cluster(list_clusters(), infra.pg_port) or _create_cluster(infra.pg_port, progress)
    if not cluster.online:
        _start_cluster(cluster, progress)
        started = True
    _ensure_login(infra, cluster, dsn, progress)
    if record is not None and (record.version, record.cluster) == (cluster.version, cluster.name):
        started = started or record.started
    return PostgresRecord(cluster.version, cluster.name, cluster.port, started)


def stop(record: PostgresRecord, progress: Progress) -> None:
    """Stop the cluster `up` started; clusters that already ran are left alone."""
    if not record.started or shutil.which("pg_ctlcluster") is None:
        return
    progress(f"Stopping PostgreSQL {record.version}/{record.cluster}…")
    command = ["pg_ctlcluster", record.version, record.cluster, "stop"]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode != 0 and "not running" not in out.stderr:
        raise InfraError(f"Stopping PostgreSQL {record.version}/{record.cluster} failed; see {out.stderr.strip()}.")


def status(infra: InfraSettings, record: PostgresRecord | None) -> ServiceStatus:
    address = f"{HOST}:{infra.pg_port}"
    if shutil.which("pg_lsclusters") is None:
        return ServiceStatus("postgresql", True, False, address, detail="PostgreSQL is not installed")
    cluster = pick_cluster(list_clusters(), infra.pg_port)
    if cluster is None:
        return ServiceStatus("postgresql", True, False, address, detail="no cluster on this port")
    ours = record is not None and record.started and (record.version, record.cluster) == (cluster.version, cluster.name)
    running = cluster.online and tcp_open(HOST, infra.pg_port)
    pid = cluster.pid() if cluster.online else None
    detail = f"cluster {cluster.label}"
    return ServiceStatus("postgresql", True, running, address, pid, cluster.log_file, ours and running, detail)


def external_status(dsn: str) -> ServiceStatus:
    """Status of the database named by DATABASE_URL (password hidden)."""
    reason = try_connect(dsn)
    address = dsn.split("@", 1)[-1] if "@" in dsn else dsn
    return ServiceStatus("postgresql", False, reason is None, address, detail=reason or "")
