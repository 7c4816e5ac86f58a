"""Pure parts of the local Kafka launcher: rendered config, command line, wire probe."""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

from assetbus.infra.kafka import (
    COMPLETE_MARKER,
    KafkaPaths,
    libs_complete,
    random_cluster_id,
    render_log4j2,
    render_server_properties,
    start_command,
)
from assetbus.infra.state import brokers_seen, parse_bootstrap
from assetbus.settings import InfraSettings


def _props(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    pairs = (line.split("=", 1) for line in lines)
    return {key.strip(): value.strip() for key, value in pairs}


def _infra(tmp_path: Path) -> InfraSettings:
    return InfraSettings(home=tmp_path, kafka_port=29092, kafka_controller_port=29093, kafka_heap="600m")


def test_server_properties_single_node_kraft(tmp_path: Path) -> None:
    props = _props(render_server_properties(_infra(tmp_path), tmp_path / "data"))
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:29093"
    assert "controller.quorum.voters" not in props  # conflicts with `format --standalone`
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:29092"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["log.dirs"] == str(tmp_path / "data")
    for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                "transaction.state.log.min.isr"):  # fmt: skip
        assert props[key] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["auto.create.topics.enable"] == "false"


def test_log4j2_writes_info_to_the_log_file(tmp_path: Path) -> None:
    props = _props(render_log4j2(tmp_path / "logs" / "kafka.log"))
    assert props["appender.file.fileName"] == str(tmp_path / "logs" / "kafka.log")
    assert props["rootLogger.level"] == "INFO"
    assert props["rootLogger.appenderRef.file.ref"] == "file"


def test_start_command(tmp_path: Path) -> None:
    infra = _infra(tmp_path)
    paths = KafkaPaths.of(infra)
    command = start_command(infra, "/usr/bin/java", paths.log4j_config, paths.server_properties)
    assert command[0] == "/usr/bin/java"
    assert "-Xmx600m" in command
    assert f"-Dlog4j2.configurationFile={paths.log4j_config}" in command
    assert command[command.index("-cp") + 1] == f"{tmp_path}/kafka-4.4.0/libs/*"
    assert command[-2:] == ["kafka.Kafka", str(tmp_path / "kafka" / "server.properties")]


def test_start_command_adds_the_jvm_options_before_the_main_class(tmp_path: Path) -> None:
    infra = _infra(tmp_path).model_copy(update={"kafka_jvm_options": " -XX:+UseSerialGC  -XX:TieredStopAtLevel=1 "})
    paths = KafkaPaths.of(infra)
    command = start_command(infra, "/usr/bin/java", paths.log4j_config, paths.server_properties)
    options = command[command.index("-XX:+UseSerialGC"):command.index("-XX:+UseSerialGC") + 2]
    assert options == ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    assert command.index("-XX:TieredStopAtLevel=1") < command.index("kafka.Kafka")


def test_cluster_id_looks_like_kafka_uuid() -> None:
    ids = {random_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)


def test_libs_complete_needs_marker_and_listed_jars(tmp_path: Path) -> None:
    assert not libs_complete(tmp_path)
    (tmp_path / "kafka_2.13-4.4.0.jar").write_bytes(b"")
    (tmp_path / COMPLETE_MARKER).write_text("kafka_2.13-4.4.0.jar\nkafka-clients-4.4.0.jar\n")
    assert not libs_complete(tmp_path)
    (tmp_path / "kafka-clients-4.4.0.jar").write_bytes(b"")
    assert libs_complete(tmp_path)


def test_metadata_request_and_response() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    requests: list[tuple[int, ...]] = []

    def answer_metadata(brokers: int, correlation_shift: int) -> None:
        conn, _ = server.accept()
        with conn:
            request = conn.recv(1024)
            requests.append((*struct.unpack_from(">ihhi", request), len(request)))
            response = struct.pack(">iii", requests[-1][3] + correlation_shift, 0, brokers) + b"rest"
            conn.sendall(struct.pack(">i", len(response)) + response)

    try:
        for brokers, shift, seen in ((3, 0, 3), (3, 1, 0)):  # another correlation id: not our answer
            thread = threading.Thread(target=answer_metadata, args=(brokers, shift), daemon=True)
            thread.start()
            assert brokers_seen("127.0.0.1", port, timeout=2.0) == seen
            thread.join(timeout=5)
        size, api_key, version, _corr, length = requests[0]
        assert (size, api_key, version) == (length - 4, 3, 4)
    finally:
        server.close()


def test_probe_rejects_a_non_kafka_server() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer_http() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=answer_http, daemon=True)
    thread.start()
    try:
        assert brokers_seen("127.0.0.1", port, timeout=2.0) == 0
    finally:
        thread.join(timeout=5)
        server.close()


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:9092, PLAINTEXT://b:9093,[::1]:9094,bad") == [
        ("a", 9092),
        ("b", 9093),
        ("::1", 9094),
    ]
