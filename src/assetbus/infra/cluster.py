"""A local multi-node Kafka cluster: N combined KRaft broker+controllers, an N-voter quorum.

Run from the same Maven Central jars as the single broker. Node n (1-based) has its own ports (each
base port + (n-1) * NODE_PORT_STEP), config, data folder and log under ``<home>/kafka-cluster``.
All nodes are formatted with one cluster id and the same ``--initial-controllers`` list (Kafka 4's
dynamic quorum); a secure cluster adds a SASL_SSL listener with a SCRAM-SHA-512 user created at
format time and a self-signed CA (`assetbus.infra.tls`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from assetbus.infra import kafka
from assetbus.infra.errors import InfraError
from assetbus.infra.state import (
    ClusterRecord,
    NodeRecord,
    Progress,
    ServiceStatus,
    brokers_seen,
    find_pids,
    pid_alive,
    stop_pid,
    tcp_open,
    wait_until,
)
from assetbus.infra.tls import SCRAM_MECHANISM, SCRAM_USER, SecureMaterial, ensure_material
from assetbus.settings import NODE_PORT_STEP, InfraSettings

HOST = kafka.HOST
SECURE_LISTENER = "SASL_SSL"


@dataclass(frozen=True)
class Node:
    """One node's ports and files."""

    node_id: int
    port: int
    controller_port: int
    secure_port: int | None
    folder: Path

    @property
    def server_properties(self) -> Path:
        return self.folder / "server.properties"

    @property
    def log4j_config(self) -> Path:
        return self.folder / "log4j2.properties"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log_file(self) -> Path:
        return self.folder.parent / "logs" / f"kafka-node-{self.node_id}.log"

    @property
    def console_log(self) -> Path:
        return self.folder.parent / "logs" / f"kafka-node-{self.node_id}-console.log"

    def record(self, pid: int) -> NodeRecord:
        return NodeRecord(self.node_id, pid, self.port, self.controller_port, self.secure_port)


@dataclass(frozen=True)
class ClusterLayout:
    """The nodes of the cluster `infra` describes, and where the cluster's shared files are."""

    folder: Path
    nodes: tuple[Node, ...]
    secure: bool

    @classmethod
    def of(cls, infra: InfraSettings) -> ClusterLayout:
        folder = infra.home.expanduser().resolve() / "kafka-cluster"
        nodes = []
        for n in range(infra.kafka_brokers):
            step = n * NODE_PORT_STEP
            secure_port = infra.kafka_secure_port + step if infra.kafka_secure else None
            nodes.append(Node(n + 1, infra.kafka_port + step, infra.kafka_controller_port + step, secure_port,
                              folder / f"node-{n + 1}"))
        return cls(folder, tuple(nodes), infra.kafka_secure)

    @classmethod
    def of_record(cls, infra: InfraSettings, record: ClusterRecord) -> ClusterLayout:
        """The layout a running cluster was started with (whatever the settings say now)."""
        folder = infra.home.expanduser().resolve() / "kafka-cluster"
        nodes = tuple(Node(n.node_id, n.port, n.controller_port, n.secure_port, folder / f"node-{n.node_id}")
                      for n in record.nodes)
        return cls(folder, nodes, record.secure)

    @property
    def format_info(self) -> Path:
        return self.folder / "format.json"

    @property
    def material(self) -> SecureMaterial:
        return SecureMaterial(self.folder / "tls")

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{node.port}" for node in self.nodes)

    @property
    def secure_bootstrap(self) -> str:
        return ",".join(f"{HOST}:{node.secure_port}" for node in self.nodes if node.secure_port)

    def shape(self) -> dict[str, object]:
        """What the storage was formatted for; a change means formatting again."""
        ports = [[node.port, node.controller_port, node.secure_port] for node in self.nodes]
        return {"nodes": len(self.nodes), "ports": ports, "secure": self.secure}


def render_node_properties(layout: ClusterLayout, node: Node) -> str:
    """server.properties of one combined broker+controller of the cluster."""
    voters = ",".join(f"{HOST}:{other.controller_port}" for other in layout.nodes)
    replicas, min_isr = str(min(3, len(layout.nodes))), str(min(2, len(layout.nodes)))
    listeners = [f"PLAINTEXT://{HOST}:{node.port}", f"CONTROLLER://{HOST}:{node.controller_port}"]
    advertised = [f"PLAINTEXT://{HOST}:{node.port}"]
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    if node.secure_port is not None:
        listeners.append(f"{SECURE_LISTENER}://{HOST}:{node.secure_port}")
        advertised.append(f"{SECURE_LISTENER}://{HOST}:{node.secure_port}")
        protocols.append(f"{SECURE_LISTENER}:{SECURE_LISTENER}")
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.bootstrap.servers": voters,
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": ",".join(protocols),
        "log.dirs": str(node.data),
        "num.partitions": "1",
        "default.replication.factor": replicas,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replicas,
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "unclean.leader.election.enable": "false",
        # a dead node is fenced (and leaves every ISR) after 6 s instead of 9 s; heartbeats every 1 s
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
    }
    if node.secure_port is not None:
        material = layout.material
        listener = f"listener.name.{SECURE_LISTENER.lower()}"
        props |= {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{listener}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{listener}.ssl.keystore.type": "PKCS12",
            f"{listener}.ssl.keystore.location": str(material.keystore),
            f"{listener}.ssl.keystore.password": material.keystore_password(),
            f"{listener}.ssl.key.password": material.keystore_password(),
        }
    lines = ["# Written by `assetbus infra up --brokers N`; edits are overwritten."]
    return "\n".join([*lines, *(f"{key}={value}" for key, value in props.items())]) + "\n"


def write_configs(layout: ClusterLayout) -> None:
    for node in layout.nodes:
        node.folder.mkdir(parents=True, exist_ok=True)
        node.log_file.parent.mkdir(parents=True, exist_ok=True)
        node.server_properties.write_text(render_node_properties(layout, node))
        node.server_properties.chmod(0o600)  # it holds the keystore password
        node.log4j_config.write_text(kafka.render_log4j2(node.log_file))


def _formatted_shape(layout: ClusterLayout) -> dict[str, object] | None:
    try:
        info: dict[str, object] = json.loads(layout.format_info.read_text())
    except (OSError, ValueError):
        return None
    if not all((node.data / "meta.properties").is_file() for node in layout.nodes):
        return None
    return info


def needs_format(layout: ClusterLayout) -> bool:
    info = _formatted_shape(layout)
    return info is None or info.get("shape") != layout.shape()


def format_storage(layout: ClusterLayout, libs: Path, java: str, progress: Progress) -> None:
    """Format every node with one cluster id and the same initial voters (drops old data)."""
    progress(f"Formatting the KRaft storage of {len(layout.nodes)} nodes (one cluster, {len(layout.nodes)} voters)…")
    cluster_id = kafka.random_cluster_id()
    directories = {node.node_id: kafka.random_cluster_id() for node in layout.nodes}
    voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}:{directories[n.node_id]}" for n in layout.nodes)
    scram = ["--add-scram", layout.material.scram_credential()] if layout.secure else []
    running: list[tuple[Node, Path, subprocess.Popen[bytes]]] = []
    for node in layout.nodes:  # in parallel: each format is a JVM start
        shutil.rmtree(node.data, ignore_errors=True)
        log = node.log_file.with_name(f"kafka-node-{node.node_id}-format.log")
        command = [java, f"-Dlog4j2.configurationFile={node.log4j_config}", "-cp", f"{libs}/*", kafka.STORAGE_TOOL,
                   "format", "-t", cluster_id, "-c", str(node.server_properties), "--initial-controllers", voters,
                   *scram]
        with log.open("wb") as out:
            running.append((node, log, subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)))
    failed = [(node, log) for node, log, proc in running if proc.wait() != 0]
    if failed:
        node, log = failed[0]
        raise InfraError(f"Formatting the Kafka storage of node {node.node_id} failed; see {log}.")
    layout.format_info.write_text(json.dumps({"cluster_id": cluster_id, "shape": layout.shape()}) + "\n")


def cluster_id(layout: ClusterLayout) -> str:
    info = _formatted_shape(layout) or {}
    return str(info.get("cluster_id", ""))


def find_node(node: Node, record: NodeRecord | None) -> int | None:
    """Pid of the node's broker (from the state, else found by its config path)."""
    marks = (kafka.MAIN_CLASS, str(node.server_properties))
    if record is not None and pid_alive(record.pid, marks):
        return record.pid
    pids = find_pids(*marks)
    return pids[0] if pids else None


def prepare(infra: InfraSettings, layout: ClusterLayout, progress: Progress, *, may_format: bool) -> str:
    """Jars, TLS material, configs and (when allowed) formatted storage; returns the java binary."""
    java = kafka.java_binary()
    paths = kafka.KafkaPaths.of(infra)
    kafka.fetch_jars(paths, progress)
    layout.folder.mkdir(parents=True, exist_ok=True)
    if layout.secure:
        fresh = not layout.material.complete
        if fresh:
            progress("Making the local cluster's CA, broker certificate and SCRAM user (keytool)…")
        ensure_material(layout.material.folder, layout.folder / "tls.log")
        if fresh:
            layout.format_info.unlink(missing_ok=True)  # the SCRAM user is created at format time
    if needs_format(layout):
        if not may_format:
            raise InfraError("The running cluster has another shape (nodes, ports, --secure); "
                             "run `assetbus infra down` first.")
        write_configs(layout)
        format_storage(layout, paths.libs, java, progress)
    write_configs(layout)
    return java


def start_node(infra: InfraSettings, node: Node, java: str, progress: Progress) -> subprocess.Popen[bytes]:
    """Launch one node detached; does not wait for it."""
    for port in (node.port, node.controller_port, node.secure_port):
        if port is not None and tcp_open(HOST, port):
            raise InfraError(f"Port {port} (Kafka node {node.node_id}) is in use by another process; "
                             "set ASSETBUS_KAFKA_PORT / ASSETBUS_KAFKA_CONTROLLER_PORT / ASSETBUS_KAFKA_SECURE_PORT.")
    progress(f"Starting Kafka node {node.node_id} on {HOST}:{node.port}…")
    paths = kafka.KafkaPaths.of(infra)
    jvm = [f"-Xmx{infra.kafka_heap}", "-Xms256m", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]
    command = [java, *jvm, f"-Dlog4j2.configurationFile={node.log4j_config}", "-cp", f"{paths.libs}/*",
               kafka.MAIN_CLASS, str(node.server_properties)]
    with node.console_log.open("ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=node.folder, start_new_session=True)


def wait_ready(layout: ClusterLayout, pids: dict[int, int], progress: Progress) -> None:
    """Poll until every node answers and lists all N brokers, or InfraError after the start timeout."""
    progress(f"Waiting for the {len(layout.nodes)} Kafka nodes to form a cluster…")
    exited: list[Node] = []

    def ready() -> bool:
        for node in layout.nodes:
            pid = pids.get(node.node_id)
            if pid is not None and not pid_alive(pid, (kafka.MAIN_CLASS, str(node.server_properties))):
                exited.append(node)
                return True
        return all(brokers_seen(HOST, node.port, 1.0) == len(layout.nodes) for node in layout.nodes)

    if not wait_until(ready, kafka.START_TIMEOUT * 2, interval=0.5) or exited:
        if exited:
            node = exited[0]
            raise InfraError(f"Kafka node {node.node_id} exited during startup; see {node.log_file} "
                             f"and {node.console_log}.")
        raise InfraError(f"The Kafka cluster did not form within {kafka.START_TIMEOUT * 2:.0f} s; "
                         f"see the logs in {layout.nodes[0].log_file.parent}.")


def node_status(node: Node, record: NodeRecord | None, expected: int) -> ServiceStatus:
    pid = find_node(node, record)
    seen = brokers_seen(HOST, node.port)
    detail = ""
    if pid is None and seen:
        detail = "another broker (not started by assetbus) answers on this port"
    elif pid is not None and not seen:
        detail = "process runs but does not answer (starting?)"
    elif pid is not None and seen < expected:
        detail = f"sees {seen} of {expected} brokers"
    if node.secure_port is not None:
        detail = "\n".join(filter(None, [f"SASL_SSL {HOST}:{node.secure_port}", detail]))
    running = pid is not None and seen > 0
    return ServiceStatus(f"kafka-{node.node_id}", True, running, f"{HOST}:{node.port}", pid, node.log_file,
                         pid is not None, detail)


def client_environment(layout: ClusterLayout) -> dict[str, str]:
    """The `KAFKA_*` settings a client of the secure listener needs (the password as a file reference)."""
    material = layout.material
    return {
        "KAFKA_BOOTSTRAP_SERVERS": layout.secure_bootstrap,
        "KAFKA_SECURITY_PROTOCOL": SECURE_LISTENER,
        "KAFKA_SASL_MECHANISM": SCRAM_MECHANISM,
        "KAFKA_SASL_USERNAME": SCRAM_USER,
        "KAFKA_SASL_PASSWORD": f"$(cat {material.scram_password_file})",
        "KAFKA_SSL_CAFILE": str(material.ca_pem),
    }


def stray_pids(layout: ClusterLayout) -> list[int]:
    """Brokers of any node folder under the cluster folder (also of nodes the state forgot)."""
    found: set[int] = set()
    for config in sorted(layout.folder.glob("node-*/server.properties")):
        found.update(find_pids(kafka.MAIN_CLASS, str(config)))
    return sorted(found)


def stop_nodes(pids: list[int], timeout: float = 30.0) -> list[int]:
    """SIGTERM every node at once (a quorum that loses nodes one by one stalls the last ones' controlled
    shutdown), SIGKILL what is left after `timeout`; returns the pids that still run."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    wait_until(lambda: not any(pid_alive(pid) for pid in pids), timeout, interval=0.2)
    for pid in pids:
        if pid_alive(pid):
            stop_pid(pid, timeout=0.0)
    return [pid for pid in pids if pid_alive(pid)]
