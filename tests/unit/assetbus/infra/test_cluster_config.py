"""Pure parts of the local cluster: node layout, rendered config, when storage must be formatted again."""

from __future__ import annotations

import json
from pathlib import Path

from assetbus.infra.cluster import ClusterLayout, client_environment, render_node_properties
from assetbus.infra.cluster_nodes import needs_format
from assetbus.infra.state import ClusterRecord, InfraState, NodeRecord
from assetbus.settings import InfraSettings


def _props(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def _infra(tmp_path: Path, *, secure: bool = False) -> InfraSettings:
    return InfraSettings(home=tmp_path, kafka_port=29092, kafka_controller_port=29093, kafka_secure_port=29094,
                         kafka_brokers=3, kafka_secure=secure)


def test_each_node_has_its_own_ports_and_folder(tmp_path: Path) -> None:
    layout = ClusterLayout.of(_infra(tmp_path))
    assert [(n.node_id, n.port, n.controller_port) for n in layout.nodes] == [
        (1, 29092, 29093), (2, 29102, 29103), (3, 29112, 29113)]
    assert len({n.folder for n in layout.nodes}) == 3 and len({n.log_file for n in layout.nodes}) == 3
    assert _infra(tmp_path).local_bootstrap() == ",".join(f"127.0.0.1:{n.port}" for n in layout.nodes) \
        == "127.0.0.1:29092,127.0.0.1:29102,127.0.0.1:29112"


def test_every_node_knows_all_three_voters_and_replicates_three_times(tmp_path: Path) -> None:
    layout = ClusterLayout.of(_infra(tmp_path))
    props = _props(render_node_properties(layout, layout.nodes[1]))
    assert props["node.id"] == "2"
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:29093,127.0.0.1:29103,127.0.0.1:29113"
    assert "controller.quorum.voters" not in props  # conflicts with `format --initial-controllers`
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29102,CONTROLLER://127.0.0.1:29103"
    assert props["log.dirs"] == str(layout.nodes[1].data)
    assert (props["default.replication.factor"], props["min.insync.replicas"]) == ("3", "2")
    assert props["offsets.topic.replication.factor"] == "3" and props["transaction.state.log.min.isr"] == "2"
    assert "sasl.enabled.mechanisms" not in props


def test_a_secure_node_adds_a_sasl_ssl_listener_with_scram(tmp_path: Path) -> None:
    layout = ClusterLayout.of(_infra(tmp_path, secure=True))
    layout.material.folder.mkdir(parents=True)
    layout.material.keystore_password_file.write_text("pw\n")
    props = _props(render_node_properties(layout, layout.nodes[2]))
    assert props["listeners"].endswith(",SASL_SSL://127.0.0.1:29114")
    assert "SASL_SSL://127.0.0.1:29114" in props["advertised.listeners"]
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["listener.name.sasl_ssl.ssl.keystore.location"] == str(layout.material.keystore)


def test_client_environment_names_the_password_file_not_the_password(tmp_path: Path) -> None:
    layout = ClusterLayout.of(_infra(tmp_path, secure=True))
    env = client_environment(layout)
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:29094,127.0.0.1:29104,127.0.0.1:29114"
    assert env["KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL" and env["KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512"
    assert env["KAFKA_SASL_PASSWORD"] == f"$(cat {layout.material.scram_password_file})"


def test_storage_is_formatted_again_only_when_the_shape_changes(tmp_path: Path) -> None:
    layout = ClusterLayout.of(_infra(tmp_path))
    assert needs_format(layout)
    for node in layout.nodes:
        node.data.mkdir(parents=True)
        (node.data / "meta.properties").write_text("")
    layout.format_info.write_text(json.dumps({"cluster_id": "x", "shape": layout.shape()}))
    assert not needs_format(layout)
    assert needs_format(ClusterLayout.of(_infra(tmp_path, secure=True)))
    moved = InfraSettings(home=tmp_path, kafka_port=39092, kafka_controller_port=39093, kafka_brokers=3)
    assert needs_format(ClusterLayout.of(moved))


def test_state_file_round_trips_the_cluster(tmp_path: Path) -> None:
    nodes = [NodeRecord(n, 100 + n, 29092 + 10 * (n - 1), 29093 + 10 * (n - 1), None) for n in (1, 2, 3)]
    InfraState(cluster=ClusterRecord("4.4.0", "abc", nodes, secure=False)).save(tmp_path)
    loaded = InfraState.load(tmp_path).cluster
    assert loaded is not None and loaded.nodes == nodes and loaded.cluster_id == "abc"
