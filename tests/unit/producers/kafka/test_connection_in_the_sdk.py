"""The SDK reads its Kafka connection from the task runner's environment; its errors name the setting, no secret."""

from __future__ import annotations

import pytest

from assetbus.producers import BrokerUnavailable, NoEmissionContext, task_token
from assetbus.producers.context import context_from_environment
from assetbus.producers.kafka import KafkaConnection, SecurityProtocol

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def test_a_comma_separated_bootstrap_list_in_the_environment_is_a_list() -> None:
    token = task_token(SECRET, "ingest", "run-1", "load")
    context = context_from_environment({"ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": "a:9092, b:9093",
                                        "KAFKA_CLIENT_ID": "worker-7"})
    assert context is not None
    assert context.kafka.bootstrap_servers == ("a:9092", "b:9093")
    assert context.kafka.client_id == "worker-7"
    assert context.kafka.bootstrap == "a:9092,b:9093"


def test_a_malformed_bootstrap_setting_names_the_variable() -> None:
    token = task_token(SECRET, "ingest", "run-1", "load")
    with pytest.raises(NoEmissionContext, match="KAFKA_BOOTSTRAP_SERVERS is not valid"):
        context_from_environment({"ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": "no-port-here"})


def test_broker_unavailable_names_the_setting_and_describes_the_connection_without_the_password() -> None:
    connection = KafkaConnection(bootstrap_servers=("b-1.msk:9096", "b-2.msk:9096"),
                                 security_protocol=SecurityProtocol.SASL_SSL, sasl_mechanism="SCRAM-SHA-512",
                                 sasl_username="emitter", sasl_password="hunter2")
    error = BrokerUnavailable.starting(connection, ConnectionError("connect call failed"))
    assert "KAFKA_BOOTSTRAP_SERVERS" in str(error)
    assert "b-1.msk:9096,b-2.msk:9096 over SASL_SSL as emitter (SCRAM-SHA-512)" in str(error)
    assert "hunter2" not in str(error) and error.retriable
