"""A local multi-node Kafka cluster (`infra up --brokers N`, docs/kafka.md): N combined KRaft
broker+controllers, an N-voter quorum, from the same jars as the single broker. Node n (1-based) has its
own ports (each base port + (n-1) * NODE_PORT_STEP), config, data and log under ``<home>/kafka-cluster``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assetbus.infra import kafka
from assetbus.infra.state import ClusterRecord
from assetbus.infra.tls import SCRAM_MECHANISM, SCRAM_USER, SecureMaterial
from assetbus.settings import NODE_PORT_STEP, InfraSettings

HOST = kafka.HOST
SECURE_LISTENER = "SASL_SSL"


@dataclass(frozen=True)
class Node:
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


@dataclass(frozen=True)
class ClusterLayout:
    """The nodes of the cluster `infra` describes, and where the cluster's shared files are."""

    folder: Path
    nodes: tuple[Node, ...]
    secure: bool

    @classmethod
    def of(cls, infra: InfraSettings, record: ClusterRecord | None = None) -> ClusterLayout:
        """The layout `infra` describes or, given the `record` of a running cluster, the one it was started with
        (whatever the settings say now)."""
        folder = infra.home.expanduser().resolve() / "kafka-cluster"
        if record is not None:
            nodes = [Node(n.node_id, n.port, n.controller_port, n.secure_port, folder / f"node-{n.node_id}")
                     for n in record.nodes]
            return cls(folder, tuple(nodes), record.secure)
        nodes = []
        for n in range(infra.kafka_brokers):
            step = n * NODE_PORT_STEP
            secure_port = infra.kafka_secure_port + step if infra.kafka_secure else None
            nodes.append(Node(n + 1, infra.kafka_port + step, infra.kafka_controller_port + step, secure_port,
                              folder / f"node-{n + 1}"))
        return cls(folder, tuple(nodes), infra.kafka_secure)

    @property
    def format_info(self) -> Path:
        return self.folder / "format.json"

    @property
    def material(self) -> SecureMaterial:
        return SecureMaterial(self.folder / "tls")

    @property
    def secure_bootstrap(self) -> str:
        return ",".join(f"{HOST}:{node.secure_port}" for node in self.nodes if node.secure_port)

    def shape(self) -> dict[str, object]:
        """What the storage was formatted for; a change means formatting again."""
        ports = [[node.port, node.controller_port, node.secure_port] for node in self.nodes]
        return {"nodes": len(self.nodes), "ports": ports, "secure": self.secure}


def render_node_properties(layout: ClusterLayout, node: Node) -> str:
    voters = ",".join(f"{HOST}:{other.controller_port}" for other in layout.nodes)
    replicas, min_isr = min(3, len(layout.nodes)), min(2, len(layout.nodes))
    listeners = {"PLAINTEXT": node.port, "CONTROLLER": node.controller_port}
    extra = {
        "default.replication.factor": str(replicas),
        "min.insync.replicas": str(min_isr),
        "unclean.leader.election.enable": "false",
        # a dead node is fenced (and leaves every ISR) after 6 s instead of 9 s; heartbeats every 1 s
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
    }
    if node.secure_port is not None:
        listeners[SECURE_LISTENER] = node.secure_port
        material = layout.material
        listener = f"listener.name.{SECURE_LISTENER.lower()}"
        extra |= {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{listener}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{listener}.ssl.keystore.type": "PKCS12",
            f"{listener}.ssl.keystore.location": str(material.keystore),
            f"{listener}.ssl.keystore.password": material.keystore_password(),
            f"{listener}.ssl.key.password": material.keystore_password(),
        }
    return kafka.render_properties(node.node_id, voters, listeners, node.data, replicas, min_isr, extra)


def write_configs(layout: ClusterLayout) -> None:
    for node in layout.nodes:
        node.folder.mkdir(parents=True, exist_ok=True)
        node.log_file.parent.mkdir(parents=True, exist_ok=True)
        node.server_properties.write_text(render_node_properties(layout, node))
        node.server_properties.chmod(0o600)  # it holds the keystore password
        node.log4j_config.write_text(kafka.render_log4j2(node.log_file))


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
