"""`up`, `down` and `status` of the local infrastructure (Kafka broker + PostgreSQL cluster)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assetbus.infra import kafka, postgres
from assetbus.infra.errors import InfraError
from assetbus.infra.state import (
    InfraState,
    InfraStatus,
    KafkaRecord,
    Progress,
    broker_answers,
    parse_bootstrap,
    pid_alive,
    stop_pid,
    wait_until,
)
from assetbus.settings import ConnectionSettings, InfraSettings

EXTERNAL_TIMEOUT = 5.0


def _quiet(_message: str) -> None:
    return None


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    """One `up`/`down` at a time per home folder."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / "infra.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _home(infra: InfraSettings) -> Path:
    return infra.home.expanduser().resolve()


def _external_kafka_up(servers: str) -> None:
    targets = parse_bootstrap(servers)
    if not targets:
        raise InfraError(f"KAFKA_BOOTSTRAP_SERVERS={servers!r} is not a host:port list; fix or unset it.")
    if not wait_until(lambda: any(broker_answers(h, p) for h, p in targets), EXTERNAL_TIMEOUT, 0.5):
        raise InfraError(
            f"No Kafka broker answers at KAFKA_BOOTSTRAP_SERVERS={servers}; start it or unset the variable."
        )


def _local_kafka_up(infra: InfraSettings, state: InfraState, home: Path, say: Progress) -> int | None:
    """Start the broker unless it runs; returns the pid to wait for (None: already answering)."""
    paths = kafka.KafkaPaths.of(infra)
    pid = kafka.find_broker(paths, state.kafka)
    if pid is not None:
        record = state.kafka
        if not pid_alive(pid, (str(paths.libs),)) or (
            record and record.pid == pid and record.version != infra.kafka_version
        ):
            raise InfraError(
                f"A Kafka broker of another version started by assetbus runs (pid {pid}); "
                "run `assetbus infra down` first."
            )
        if record and record.pid == pid and record.port != infra.kafka_port:
            raise InfraError(
                f"The local Kafka broker runs on port {record.port}, not {infra.kafka_port}; "
                "run `assetbus infra down` first."
            )
        if record is None or record.pid != pid:
            state.kafka = KafkaRecord(pid, infra.kafka_version, infra.kafka_port, infra.kafka_controller_port)
            state.save(home)
        return None if broker_answers(kafka.HOST, infra.kafka_port) else pid
    proc = kafka.start(infra, paths, say)
    state.kafka = KafkaRecord(proc.pid, infra.kafka_version, infra.kafka_port, infra.kafka_controller_port)
    state.save(home)
    return proc.pid


def up(infra: InfraSettings, conn: ConnectionSettings, progress: Progress | None = None) -> InfraStatus:
    """Start (or check) Kafka and PostgreSQL; a no-op for what already runs. Raises InfraError."""
    say = progress or _quiet
    home = _home(infra)
    with _locked(home):
        state = InfraState.load(home)
        wait_pid = None
        if conn.kafka_bootstrap_servers:
            _external_kafka_up(conn.kafka_bootstrap_servers)
        else:
            wait_pid = _local_kafka_up(infra, state, home, say)
        if conn.database_url:
            reason = postgres.try_connect(conn.db_url(infra))
            if reason is not None:
                raise InfraError(f"Cannot connect to DATABASE_URL ({reason}); fix it or unset it to use the local one.")
        else:
            state.postgres = postgres.up(infra, conn.db_url(infra), state.postgres, say)
            state.save(home)
        if wait_pid is not None:  # the broker boots while PostgreSQL is being set up
            try:
                kafka.wait_ready(infra, kafka.KafkaPaths.of(infra), wait_pid, say)
            except InfraError:
                state.kafka = None
                state.save(home)
                raise
    return status(infra, conn)


def down(infra: InfraSettings, conn: ConnectionSettings, progress: Progress | None = None) -> InfraStatus:
    """Stop what `up` started (never external services or clusters that already ran)."""
    say = progress or _quiet
    home = _home(infra)
    with _locked(home):
        state = InfraState.load(home)
        if not conn.kafka_bootstrap_servers:
            pid = kafka.find_broker(kafka.KafkaPaths.of(infra), state.kafka)
            if pid is not None:
                say(f"Stopping the Kafka broker (pid {pid})…")
                stop_pid(pid)
                if pid_alive(pid):
                    raise InfraError(f"The Kafka broker (pid {pid}) did not stop; kill it and run down again.")
            state.kafka = None
            state.save(home)
        if not conn.database_url and state.postgres is not None:
            record = state.postgres
            if record.started:
                postgres.stop(record, say)
            else:
                say(f"PostgreSQL {record.version}/{record.cluster} ran before `infra up`; leaving it running.")
            state.postgres = None
            state.save(home)
    return status(infra, conn)


def status(infra: InfraSettings, conn: ConnectionSettings) -> InfraStatus:
    """What runs now, and who started it."""
    state = InfraState.load(_home(infra))
    if conn.kafka_bootstrap_servers:
        kafka_status = kafka.external_status(conn.kafka_bootstrap_servers)
    else:
        kafka_status = kafka.status(infra, kafka.KafkaPaths.of(infra), state.kafka)
    if conn.database_url:
        pg_status = postgres.external_status(conn.db_url(infra))
    else:
        pg_status = postgres.status(infra, state.postgres)
    return InfraStatus(kafka=kafka_status, postgres=pg_status)
