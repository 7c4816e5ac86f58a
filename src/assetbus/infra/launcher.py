"""`up`, `down` and `status` of the local infrastructure (Kafka broker + PostgreSQL cluster)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assetbus.infra import cluster, kafka, postgres
from assetbus.infra import cluster_nodes as runner
from assetbus.infra.errors import InfraError
from assetbus.infra.state import (
    ClusterRecord,
    InfraState,
    InfraStatus,
    KafkaRecord,
    NodeRecord,
    Progress,
    ServiceStatus,
    brokers_seen,
    parse_bootstrap,
    pid_alive,
    stop_pids,
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
    if not wait_until(lambda: any(brokers_seen(h, p) > 0 for h, p in targets), EXTERNAL_TIMEOUT, 0.5):
        raise InfraError(f"No Kafka broker answers at KAFKA_BOOTSTRAP_SERVERS={servers}; start it or unset the "
                         "variable.")


def _local_kafka_up(infra: InfraSettings, state: InfraState, home: Path, say: Progress) -> int | None:
    """Start the broker unless it runs; returns the pid to wait for (None: already answering)."""
    paths = kafka.KafkaPaths.of(infra)
    pid = kafka.find_broker(paths.server_properties, state.kafka)
    if pid is not None:
        record = state.kafka
        if not pid_alive(pid, (str(paths.libs),)) or (record and record.pid == pid
                                                      and record.version != infra.kafka_version):
            raise InfraError(f"A Kafka broker of another version started by assetbus runs (pid {pid}); "
                             "run `assetbus infra down` first.")
        if record and record.pid == pid and record.port != infra.kafka_port:
            raise InfraError(f"The local Kafka broker runs on port {record.port}, not {infra.kafka_port}; "
                             "run `assetbus infra down` first.")
        if record is None or record.pid != pid:
            state.kafka = KafkaRecord(pid, infra.kafka_version, infra.kafka_port, infra.kafka_controller_port)
            state.save(home)
        return None if brokers_seen(kafka.HOST, infra.kafka_port) else pid
    proc = kafka.start(infra, paths, say)
    state.kafka = KafkaRecord(proc.pid, infra.kafka_version, infra.kafka_port, infra.kafka_controller_port)
    state.save(home)
    return proc.pid


def _cluster_pids(infra: InfraSettings, state: InfraState) -> dict[int, int]:
    """Node id → pid of the recorded cluster's nodes that run."""
    if state.cluster is None:
        return {}
    layout = cluster.ClusterLayout.of(infra, state.cluster)
    pids = {node.node_id: kafka.find_broker(node.server_properties, record)
            for node, record in zip(layout.nodes, state.cluster.nodes, strict=True)}
    return {node_id: pid for node_id, pid in pids.items() if pid is not None}


def _local_cluster_up(infra: InfraSettings, state: InfraState, home: Path, say: Progress) -> dict[int, int] | None:
    """Start the nodes of the cluster that do not run; returns the pids to wait for (None: all answer)."""
    if kafka.find_broker(kafka.KafkaPaths.of(infra).server_properties, state.kafka) is not None:
        raise InfraError("The single local Kafka broker runs; run `assetbus infra down` before `up --brokers N`.")
    layout = cluster.ClusterLayout.of(infra)
    running = _cluster_pids(infra, state)
    record = state.cluster
    if running and record is not None and (record.version != infra.kafka_version or record.secure != layout.secure
                                           or [n.node_id for n in record.nodes] != [n.node_id for n in layout.nodes]):
        raise InfraError(f"A local Kafka cluster of another shape runs ({len(record.nodes)} nodes, Kafka "
                         f"{record.version}, secure={record.secure}); run `assetbus infra down` first.")
    java = runner.prepare(infra, layout, say, may_format=not running)
    pids = dict(running)
    for node in layout.nodes:
        if node.node_id not in running:
            pids[node.node_id] = runner.start_node(infra, node, java, say).pid
    records = [NodeRecord(n.node_id, pids[n.node_id], n.port, n.controller_port, n.secure_port) for n in layout.nodes]
    state.cluster = ClusterRecord(infra.kafka_version, runner.cluster_id(layout), records, layout.secure)
    state.save(home)
    answering = all(brokers_seen(kafka.HOST, n.port, 1.0) == len(layout.nodes) for n in layout.nodes)
    return None if len(running) == len(layout.nodes) and answering else pids


def up(infra: InfraSettings, conn: ConnectionSettings, progress: Progress = _quiet) -> InfraStatus:
    """Start (or check) Kafka and PostgreSQL; a no-op for what already runs. Raises InfraError."""
    home = _home(infra)
    with _locked(home):
        state = InfraState.load(home)
        wait_pid = None
        wait_nodes: dict[int, int] | None = None
        if conn.kafka_bootstrap_servers:
            _external_kafka_up(conn.kafka_bootstrap_servers)
        elif infra.kafka_brokers > 1:
            wait_nodes = _local_cluster_up(infra, state, home, progress)
        else:
            if _cluster_pids(infra, state):
                raise InfraError("A local Kafka cluster runs; use `assetbus infra up --brokers "
                                 f"{len(state.cluster.nodes) if state.cluster else 3}` or run `assetbus infra down`.")
            wait_pid = _local_kafka_up(infra, state, home, progress)
        if conn.database_url:
            reason = postgres.try_connect(conn.db_url(infra))
            if reason is not None:
                raise InfraError(f"Cannot connect to DATABASE_URL ({reason}); fix it or unset it to use the local one.")
        else:
            state.postgres = postgres.up(infra, conn.db_url(infra), state.postgres, progress)
            state.save(home)
        if wait_pid is not None:  # the broker boots while PostgreSQL is being set up
            try:
                kafka.wait_ready(infra, kafka.KafkaPaths.of(infra), wait_pid, progress)
            except InfraError:
                state.kafka = None
                state.save(home)
                raise
        if wait_nodes is not None:
            runner.wait_ready(cluster.ClusterLayout.of(infra), wait_nodes, progress)
    return status(infra, conn)


def down(infra: InfraSettings, conn: ConnectionSettings, progress: Progress = _quiet) -> InfraStatus:
    """Stop what `up` started (never external services or clusters that already ran)."""
    home = _home(infra)
    with _locked(home):
        state = InfraState.load(home)
        if not conn.kafka_bootstrap_servers:
            pid = kafka.find_broker(kafka.KafkaPaths.of(infra).server_properties, state.kafka)
            if pid is not None:
                progress(f"Stopping the Kafka broker (pid {pid})…")
                if stop_pids([pid]):
                    raise InfraError(f"The Kafka broker (pid {pid}) did not stop; kill it and run down again.")
            state.kafka = None
            state.save(home)
            _cluster_down(infra, state, home, progress)
        if not conn.database_url and state.postgres is not None:
            record = state.postgres
            if record.started:
                postgres.stop(record, progress)
            else:
                progress(f"PostgreSQL {record.version}/{record.cluster} ran before `infra up`; leaving it running.")
            state.postgres = None
            state.save(home)
    return status(infra, conn)


def _cluster_down(infra: InfraSettings, state: InfraState, home: Path, say: Progress) -> None:
    """Stop every node of the local cluster (those of the state file and any left in its folder)."""
    layout = cluster.ClusterLayout.of(infra, state.cluster)
    pids = sorted({*_cluster_pids(infra, state).values(), *runner.stray_pids(layout)})
    if pids:
        say(f"Stopping {len(pids)} Kafka node(s) (pids {', '.join(map(str, pids))})…")
        left = stop_pids(pids)
        if left:
            raise InfraError(f"Kafka node(s) {left} did not stop; kill them and run down again.")
    state.cluster = None
    state.save(home)


def _summary(nodes: tuple[ServiceStatus, ...]) -> ServiceStatus:
    up_count = sum(node.running for node in nodes)
    address = ",".join(node.address for node in nodes)
    detail = f"{up_count} of {len(nodes)} nodes running"
    ours = any(node.started_by_us for node in nodes)
    return ServiceStatus("kafka", True, up_count == len(nodes), address, started_by_us=ours, detail=detail)


def status(infra: InfraSettings, conn: ConnectionSettings) -> InfraStatus:
    """What runs now, and who started it."""
    state = InfraState.load(_home(infra))
    nodes: tuple[ServiceStatus, ...] = ()
    if conn.kafka_bootstrap_servers:
        kafka_status = kafka.external_status(conn.kafka_bootstrap_servers)
    elif state.cluster is not None or infra.kafka_brokers > 1:
        layout = cluster.ClusterLayout.of(infra, state.cluster)
        records = {n.node_id: n for n in state.cluster.nodes} if state.cluster else {}
        nodes = tuple(runner.node_status(node, records.get(node.node_id), len(layout.nodes)) for node in layout.nodes)
        kafka_status = _summary(nodes)
    else:
        paths = kafka.KafkaPaths.of(infra)
        kafka_status = kafka.status("kafka", infra.kafka_port, paths.server_properties, state.kafka, paths.log_file)
    if conn.database_url:
        pg_status = postgres.external_status(conn.db_url(infra))
    else:
        pg_status = postgres.status(infra, state.postgres)
    return InfraStatus(kafka=kafka_status, postgres=pg_status, kafka_nodes=nodes)


def secure_client_environment(infra: InfraSettings) -> dict[str, str]:
    """The `KAFKA_*` settings of a client of the local cluster's SASL_SSL listener (no secret in them)."""
    return cluster.client_environment(cluster.ClusterLayout.of(infra))
