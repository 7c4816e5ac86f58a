"""Kafka client properties pass through to aiokafka; an unknown or assetbus-owned key is refused, named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assetbus.producers.context import context_from_environment
from assetbus.producers.errors import NoEmissionContext
from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.properties import CLIENT_PROPERTIES

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def test_properties_from_a_file_and_inline_become_aiokafka_arguments_inline_winning(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("# the platform's defaults\nclient.rack=eu-west-1a\nmetadata.max.age.ms = 60000\n"
                    "request.timeout.ms: 20000\n")
    connection = KafkaConnection.from_environ({"KAFKA_PROPERTIES_FILE": str(path),
                                               "KAFKA_PROPERTIES": "client.rack=eu-west-1b; retry.backoff.ms=250"})
    consumer = connection.client_kwargs("consumer")
    assert (consumer["client_rack"], consumer["metadata_max_age_ms"], consumer["request_timeout_ms"],
            consumer["retry_backoff_ms"]) == ("eu-west-1b", 60000, 20000, 250)


def test_each_client_gets_only_the_properties_it_takes() -> None:
    connection = KafkaConnection(properties={"client.rack": "r1", "metadata.max.age.ms": "1000",
                                             "max.request.size": "2000000", "request.timeout.ms": "9000"})
    assert "client_rack" not in connection.client_kwargs("producer")
    assert connection.client_kwargs("producer")["max_request_size"] == 2_000_000
    assert "max_request_size" not in connection.client_kwargs("consumer")
    admin = connection.client_kwargs("admin")
    assert admin["metadata_max_age_ms"] == 1000 and "request_timeout_ms" not in admin and "client_rack" not in admin
    assert set(connection.client_kwargs()) == set(admin)  # any client: only what every client takes


def test_an_unknown_key_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"unknown Kafka client property 'client\.rak'"):
        KafkaConnection.from_environ({"KAFKA_PROPERTIES": "client.rak=eu-west-1a"})


def test_a_key_assetbus_sets_names_the_setting_to_use() -> None:
    with pytest.raises(ValidationError, match=r"'acks' is set by assetbus; use nothing: assetbus always sends"):
        KafkaConnection(properties={"acks": "1"})
    with pytest.raises(ValidationError, match=r"'group\.instance\.id' is set by assetbus; use ASSETBUS_<SERVICE>_"):
        KafkaConnection(properties={"group.instance.id": "p-0"})


def test_a_value_of_the_wrong_type_and_an_unreadable_file_are_errors_naming_them(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"'metadata\.max\.age\.ms' must be an integer, not 'soon'"):
        KafkaConnection(properties={"metadata.max.age.ms": "soon"})
    with pytest.raises(ValidationError, match=r"cannot read KAFKA_PROPERTIES_FILE .*missing\.properties"):
        KafkaConnection.from_environ({"KAFKA_PROPERTIES_FILE": str(tmp_path / "missing.properties")})


def test_every_pass_through_property_is_an_argument_of_the_aiokafka_clients_it_is_given_to() -> None:
    import inspect

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

    classes = {"producer": AIOKafkaProducer, "consumer": AIOKafkaConsumer, "admin": AIOKafkaAdminClient}
    for key, known in CLIENT_PROPERTIES.items():
        for role in known.roles:
            assert known.kwarg in inspect.signature(classes[role]).parameters, (key, role)


def test_the_sdk_refuses_an_unknown_property_in_the_task_environment_naming_it() -> None:
    from assetbus.producers import task_token

    token = task_token(SECRET, "ingest", "run-1", "load")
    with pytest.raises(NoEmissionContext, match=r"unknown Kafka client property 'linger'"):
        context_from_environment({"ASSETBUS_TOKEN": token, "KAFKA_PROPERTIES": "linger=5"})


def test_a_service_client_id_names_the_service_and_host_once() -> None:
    connection = KafkaConnection().for_service("persister", host="node-7")
    assert connection.client_id == "assetbus-persister-node-7"
    assert connection.for_service("persister", host="node-7").client_id == "assetbus-persister-node-7"
    assert KafkaConnection(client_id="orders").for_service("cli", host="h").client_kwargs()["client_id"] == \
        "orders-cli-h"


def test_a_connection_with_properties_stays_hashable_and_equal_to_its_copy() -> None:
    connection = KafkaConnection(properties={"metadata.max.age.ms": "1000", "client.rack": "r1"})
    assert hash(connection) == hash(KafkaConnection.model_validate(connection.model_dump()))
    assert dict(connection.properties) == {"client.rack": "r1", "metadata.max.age.ms": "1000"}


CODECS = ["snappy", "lz4", "zstd"]
"""The compression types whose codec aiokafka finds only when cramjam is installed."""


@pytest.mark.parametrize("codec", CODECS)
def test_a_compression_whose_codec_is_not_installed_is_refused_naming_the_setting_and_the_package(
        monkeypatch: pytest.MonkeyPatch, codec: str) -> None:
    from aiokafka import codec as codecs

    monkeypatch.setattr(codecs, f"has_{codec}", lambda: False)
    with pytest.raises(ValidationError, match=rf"'compression\.type' is {codec}, whose codec is not installed: "
                                              r"pip install cramjam"):
        KafkaConnection.from_environ({"KAFKA_PROPERTIES": f"compression.type={codec}"})


@pytest.mark.parametrize("codec", CODECS)
def test_a_compression_whose_codec_is_installed_reaches_the_producer(monkeypatch: pytest.MonkeyPatch,
                                                                     codec: str) -> None:
    from aiokafka import codec as codecs

    monkeypatch.setattr(codecs, f"has_{codec}", lambda: True)
    connection = KafkaConnection(properties={"compression.type": codec})
    assert connection.client_kwargs("producer")["compression_type"] == codec


def test_gzip_needs_nothing_none_is_the_default_and_an_unknown_compression_is_refused() -> None:
    assert KafkaConnection(properties={"compression.type": "gzip"}).client_kwargs("producer")["compression_type"] \
        == "gzip"
    assert "compression_type" not in KafkaConnection(properties={"compression.type": "none"}).client_kwargs("producer")
    with pytest.raises(ValidationError, match=r"'compression\.type' must be one of none, gzip, snappy, lz4, zstd, "
                                              r"not 'brotli'"):
        KafkaConnection(properties={"compression.type": "brotli"})


@pytest.mark.parametrize("codec", ["none", "gzip", *CODECS])
async def test_a_compression_passes_validation_exactly_when_aiokafkas_producer_takes_it(codec: str) -> None:
    from aiokafka import AIOKafkaProducer

    try:
        connection = KafkaConnection(properties={"compression.type": codec})
    except ValidationError:
        with pytest.raises((RuntimeError, ValueError)):  # what the persister crashed with at start
            AIOKafkaProducer(compression_type=codec)
    else:
        await AIOKafkaProducer(**connection.client_kwargs("producer")).stop()  # never started: nothing to send


def test_an_emitters_compression_argument_is_checked_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka import codec as codecs

    from assetbus.producers.dispatch import DispatchConfig

    monkeypatch.setattr(codecs, "has_zstd", lambda: False)
    with pytest.raises(ValueError, match=r"^compression is zstd, whose codec is not installed: pip install cramjam"):
        DispatchConfig(compression="zstd")
    assert DispatchConfig(compression="gzip").compression == "gzip"


async def test_an_explicit_none_wins_over_the_connections_compression() -> None:
    from assetbus.producers.kafka.producer import create_producer

    producer = create_producer(KafkaConnection(properties={"compression.type": "gzip"}), compression="none")
    try:
        assert producer._compression_type is None
    finally:
        await producer.stop()
