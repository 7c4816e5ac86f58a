"""The local 3-node cluster under test: its settings, nodes to kill and restart, replicated topics."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from assetbus.infra import down, status, up
from assetbus.infra.cluster import ClusterLayout
from assetbus.infra.state import pid_alive, wait_until
from assetbus.infra.tls import SCRAM_MECHANISM, SCRAM_USER
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import Topics
from assetbus.settings import ConnectionSettings, InfraSettings
from tests.helpers import wait_for

NODES = 3
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
BASE_PORT = int(os.environ.get("ASSETBUS_CLUSTER_TEST_PORT", "29092"))
"""Node n listens on BASE_PORT + 10(n-1) (plaintext), + 1 (controller), + 2 (SASL_SSL)."""


TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The test cluster's nodes start and restart often and carry little load: the C1 compiler alone and the serial
collector halve a node's CPU to its first answer (3.4 against 6.7 CPU-s on two cores)."""


def cluster_settings(home: Path) -> InfraSettings:
    """A secure 3-node cluster in its own home and on its own ports (never the shared broker's)."""
    return InfraSettings(home=home, kafka_port=BASE_PORT, kafka_controller_port=BASE_PORT + 1,
                         kafka_secure_port=BASE_PORT + 2, kafka_brokers=NODES, kafka_secure=True, kafka_heap="512m",
                         kafka_jvm_options=TEST_JVM_OPTIONS)


@dataclass
class LocalCluster:
    """Handle on the running cluster: addresses, connections, kill -9 and restart of single nodes."""

    infra: InfraSettings
    conn: ConnectionSettings

    @property
    def layout(self) -> ClusterLayout:
        return ClusterLayout.of(self.infra)

    def address(self, node_id: int) -> str:
        return next(f"127.0.0.1:{n.port}" for n in self.layout.nodes if n.node_id == node_id)

    def connection(self, *, without: int | None = None) -> KafkaConnection:
        """Plaintext connection to every node (or every node but one)."""
        servers = [self.address(n.node_id) for n in self.layout.nodes if n.node_id != without]
        return KafkaConnection(bootstrap_servers=tuple(servers))

    def secure_connection(self, **overrides: Any) -> KafkaConnection:
        """SASL_SSL + SCRAM-SHA-512 connection, trusting the cluster's CA (fields can be overridden)."""
        material = self.layout.material
        values: dict[str, Any] = {
            "bootstrap_servers": self.layout.secure_bootstrap, "security_protocol": "SASL_SSL",
            "sasl_mechanism": SCRAM_MECHANISM, "sasl_username": SCRAM_USER,
            "sasl_password": material.scram_password(), "ssl_cafile": str(material.ca_pem),
        }
        return KafkaConnection.model_validate({**values, **overrides})

    def secure_environment(self, **overrides: str) -> dict[str, str]:
        """`KAFKA_*` variables of `secure_connection()` for a service process (values can be overridden)."""
        connection = self.secure_connection()
        password = connection.sasl_password.get_secret_value() if connection.sasl_password else ""
        env = {"KAFKA_BOOTSTRAP_SERVERS": connection.bootstrap, "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
               "KAFKA_SASL_MECHANISM": SCRAM_MECHANISM, "KAFKA_SASL_USERNAME": SCRAM_USER,
               "KAFKA_SASL_PASSWORD": password, "KAFKA_SSL_CAFILE": str(self.layout.material.ca_pem)}
        return {**env, **overrides}

    def pids(self) -> dict[int, int]:
        """Node id → pid of the nodes that run."""
        nodes = status(self.infra, self.conn).kafka_nodes
        return {int(n.name.rsplit("-", 1)[1]): n.pid for n in nodes if n.pid is not None}

    def kill(self, node_id: int) -> None:
        """kill -9 one node (only a node of this cluster, by its pid) and wait until it is gone."""
        pid = self.pids()[node_id]
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not pid_alive(pid), 10.0, 0.05), f"node {node_id} (pid {pid}) survived kill -9"

    async def restart(self) -> None:
        """`infra up` again: starts the nodes that do not run and waits until all of them form the cluster."""
        await asyncio.to_thread(up, self.infra, self.conn)

    def start(self) -> None:
        up(self.infra, self.conn)

    def stop(self) -> None:
        down(self.infra, self.conn)


async def create_replicated_topics(connection: KafkaConnection, topics: Topics | dict[str, int]) -> None:
    """The core topics (or the given name → partitions) with replication factor 3 and min.insync.replicas 2."""
    wanted = topics.core() if isinstance(topics, Topics) else topics
    admin = AIOKafkaAdminClient(**connection.client_kwargs(), request_timeout_ms=30000)
    await admin.start()
    try:
        new = [NewTopic(name, partitions, REPLICATION_FACTOR,
                        topic_configs={"min.insync.replicas": str(MIN_INSYNC_REPLICAS)})
               for name, partitions in wanted.items()]
        try:
            await admin.create_topics(new)
        except TopicAlreadyExistsError:
            pass
    finally:
        await admin.close()


async def describe(connection: KafkaConnection, topic: str) -> list[dict[str, Any]]:
    """Partitions of `topic` (partition, leader, replicas, isr) once every partition has a leader."""
    admin = AIOKafkaAdminClient(**connection.client_kwargs())
    await admin.start()

    async def led() -> list[dict[str, Any]]:
        found = await admin.describe_topics([topic])
        partitions: list[dict[str, Any]] = found[0]["partitions"] if found else []
        if partitions and all(p["leader"] >= 0 for p in partitions):
            return sorted(partitions, key=lambda p: p["partition"])
        return []

    try:
        return await wait_for(led, timeout_s=20, interval=0.1, what=f"a leader for every partition of {topic}")
    finally:
        await admin.close()


async def busiest_leader(connection: KafkaConnection, topic: str) -> int:
    """The node that leads the most partitions of `topic`."""
    counts = Counter(p["leader"] for p in await describe(connection, topic))
    return int(counts.most_common(1)[0][0])


async def topic_config(connection: KafkaConnection, topic: str) -> dict[str, str]:
    """A topic's config as the cluster describes it, once a broker answers for it.

    A describe sent a moment after the topic was created can reach a node that has not yet
    applied the new topic's metadata: it answers with an error code or no entries. Wait past that.
    """
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(**connection.client_kwargs())
    await admin.start()

    async def described() -> dict[str, str]:
        response = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        error_code, _message, _type, _name, entries = response[0].resources[0][:5]
        return {entry[0]: entry[1] for entry in entries} if error_code == 0 else {}

    try:
        return await wait_for(described, timeout_s=30, interval=0.2, what=f"the config of {topic}")
    finally:
        await admin.close()


async def group_members(connection: KafkaConnection, group: str) -> int:
    """Members of a consumer group that is Stable (0 while it rebalances or does not exist)."""
    admin = AIOKafkaAdminClient(**connection.client_kwargs())
    await admin.start()
    try:
        for response in await admin.describe_consumer_groups([group]):
            for described in response.groups:  # (error, group id, state, protocol type, protocol, members, …)
                if described[1] == group and described[2] == "Stable":
                    return len(described[5])
        return 0
    finally:
        await admin.close()


async def leader_of_key(connection: KafkaConnection, topic: str, key: str) -> int:
    """The node leading the partition that `key` goes to (the producers' murmur2 partitioner)."""
    from aiokafka.partitioner import DefaultPartitioner

    partitions = await describe(connection, topic)
    ids = [p["partition"] for p in partitions]
    target = DefaultPartitioner()(key.encode(), ids, ids)
    return int(next(p["leader"] for p in partitions if p["partition"] == target))
