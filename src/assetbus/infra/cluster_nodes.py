"""Running the nodes of a local cluster: format their storage, start, wait for, inspect and stop them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from assetbus.infra import kafka
from assetbus.infra.cluster import HOST, ClusterLayout, Node, write_configs
from assetbus.infra.errors import InfraError
from assetbus.infra.state import (
    NodeRecord,
    Progress,
    ServiceStatus,
    brokers_seen,
    find_pids,
    pid_alive,
    tcp_open,
    wait_until,
)
from assetbus.infra.tls import ensure_material
from assetbus.settings import InfraSettings


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
    return kafka.launch(infra, java, node.log4j_config, node.server_properties, node.console_log)


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
    listener = f"SASL_SSL {HOST}:{node.secure_port}" if node.secure_port is not None else ""
    return kafka.status(f"kafka-{node.node_id}", node.port, node.server_properties, record, node.log_file, expected,
                        listener)


def stray_pids(layout: ClusterLayout) -> list[int]:
    """Brokers of any node folder under the cluster folder (also of nodes the state forgot)."""
    found: set[int] = set()
    for config in sorted(layout.folder.glob("node-*/server.properties")):
        found.update(find_pids(kafka.MAIN_CLASS, str(config)))
    return sorted(found)
