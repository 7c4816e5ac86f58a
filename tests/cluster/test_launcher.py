"""`assetbus infra up --brokers 3`: three KRaft nodes, one quorum, replicated topics; idempotent; `down` stops all."""

from __future__ import annotations

import time
import uuid

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from assetbus.infra import down, status, up
from assetbus.infra.state import InfraState, pid_alive
from tests.cluster.harness import MIN_INSYNC_REPLICAS, NODES, LocalCluster, describe, topic_config
from tests.helpers import wait_for


async def _create_topic(cluster: LocalCluster, partitions: int = 3) -> str:
    name = f"launcher-{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(**cluster.connection().client_kwargs())
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, NODES,
                                            topic_configs={"min.insync.replicas": str(MIN_INSYNC_REPLICAS)})])
    finally:
        await admin.close()
    return name


async def test_three_nodes_form_one_cluster_that_keeps_three_in_sync_replicas(cluster: LocalCluster) -> None:
    result = status(cluster.infra, cluster.conn)
    assert [node.name for node in result.kafka_nodes] == ["kafka-1", "kafka-2", "kafka-3"]
    assert all(node.running and node.started_by_us for node in result.kafka_nodes), result.kafka_nodes
    assert result.kafka.running and result.kafka.detail == "3 of 3 nodes running"
    pids = [node.pid for node in result.kafka_nodes]
    assert len(set(pids)) == NODES
    record = InfraState.load(cluster.infra.home).cluster
    assert record is not None and record.secure and [n.pid for n in record.nodes] == pids
    assert len({n.port for n in record.nodes}) == NODES and record.cluster_id

    topic = await _create_topic(cluster, partitions=6)
    partitions = await describe(cluster.connection(), topic)
    assert {p["leader"] for p in partitions} == {1, 2, 3}, "leadership is spread over the three nodes"
    assert all(sorted(p["replicas"]) == [1, 2, 3] for p in partitions)
    assert all(sorted(p["isr"]) == [1, 2, 3] for p in partitions), partitions
    assert (await topic_config(cluster.connection(), topic))["min.insync.replicas"] == "2"


def test_up_again_is_a_fast_no_op(cluster: LocalCluster) -> None:
    before = cluster.pids()
    started = time.monotonic()
    result = up(cluster.infra, cluster.conn)
    elapsed = time.monotonic() - started
    assert cluster.pids() == before and len(before) == NODES
    assert result.kafka.running
    assert elapsed < 15.0, f"a second `up` took {elapsed:.1f} s"


async def test_down_stops_every_node_and_up_brings_the_cluster_back_with_its_topics(cluster: LocalCluster) -> None:
    topic = await _create_topic(cluster)
    pids = list(cluster.pids().values())

    stopped = down(cluster.infra, cluster.conn)
    assert [node.running for node in stopped.kafka_nodes] == [False, False, False]
    assert not stopped.kafka.running
    assert not any(pid_alive(pid) for pid in pids)
    assert InfraState.load(cluster.infra.home).cluster is None

    again = up(cluster.infra, cluster.conn)
    assert again.kafka.running and len(again.kafka_nodes) == NODES

    async def all_in_sync() -> bool:
        partitions = await describe(cluster.connection(), topic)
        return len(partitions) == 3 and all(sorted(p["isr"]) == [1, 2, 3] for p in partitions)

    await wait_for(all_in_sync, timeout_s=90, interval=0.5, what="the topic back on every node after down/up")
