"""The `assetbus` connection's extras (topic prefix, Kafka inline or by reference to a kafka_default-style
connection), what a worker uses when the connection says nothing, the provider info Airflow reads, and the
refusal of an Airflow older than 3.3."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import entry_points, version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from assetbus.producers.airflow import Attempt, TokenSource
from assetbus.producers.airflow import connection as airflow_connection
from assetbus.producers.airflow.connection import InvalidConnection, WorkerAccess, worker_access
from assetbus.producers.airflow.provider import get_provider_info
from assetbus.producers.airflow.runtime import MIN_AIRFLOW, MIN_TASK_SDK, mismatch
from assetbus.producers.kafka.connection import SecurityProtocol
from tests.unit.producers.airflow.token_api import answer_token_requests

ATTEMPT = Attempt(dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1,
                  ti_id="0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c")


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSETBUS_API_URL", "ASSETBUS_AIRFLOW_WORKER_TOKEN", "ASSETBUS_TOPIC_PREFIX",
                 "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_SECURITY_PROTOCOL", "KAFKA_SASL_MECHANISM",
                 "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")  # the token asked with the credential


def _connections(monkeypatch: pytest.MonkeyPatch, **connections: dict[str, Any]) -> None:
    found = {conn_id: SimpleNamespace(**{"host": None, "port": None, "schema": None, "password": None,
                                         "extra": None, **fields}) for conn_id, fields in connections.items()}
    monkeypatch.setattr(airflow_connection, "_airflow_connection", found.get)


def test_kafka_inline_in_the_extra_with_sasl_and_the_topic_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    _connections(monkeypatch, assetbus_default={"host": "http://api:8321", "password": "cred", "extra": json.dumps({
        "topic_prefix": "prod", "kafka": {"bootstrap_servers": "b1:9093,b2:9093", "security_protocol": "sasl_ssl",
                                          "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "worker",
                                          "sasl_password": "from-the-secrets-backend"}})})
    access = worker_access()
    assert access.topic_prefix == "prod" and access.kafka is not None
    assert access.kafka.bootstrap_servers == ("b1:9093", "b2:9093")
    assert access.kafka.security_protocol is SecurityProtocol.SASL_SSL
    assert access.kafka.client_kwargs()["sasl_plain_password"] == "from-the-secrets-backend"
    assert "from-the-secrets-backend" not in repr(access)


def test_kafka_by_reference_to_a_kafka_default_style_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    _connections(monkeypatch,
                 assetbus_default={"host": "api", "password": "cred", "extra": {"kafka_conn_id": "kafka_default"}},
                 kafka_default={"extra": json.dumps({"bootstrap.servers": "broker:29092", "group.id": "ignored",
                                                     "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                                                     "sasl.username": "u", "sasl.password": "p"})})
    kafka = worker_access().kafka
    assert kafka is not None and kafka.bootstrap_servers == ("broker:29092",)
    assert (kafka.sasl_mechanism, kafka.sasl_username) == ("PLAIN", "u")


def test_a_kafka_connection_that_cannot_be_used_is_refused_with_where_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    _connections(monkeypatch, assetbus_default={"extra": {"kafka_conn_id": "kafka_missing"}})
    with pytest.raises(InvalidConnection, match="kafka_missing"):
        worker_access()
    _connections(monkeypatch, assetbus_default={"extra": {"kafka_conn_id": "k", "kafka": {}}})
    with pytest.raises(InvalidConnection, match="keep one"):
        worker_access()
    _connections(monkeypatch, assetbus_default={"extra": {"kafka": {"bootstrap_servers": "b:1",
                                                                     "security_protocol": "SASL_SSL"}}})
    with pytest.raises(InvalidConnection, match="`kafka` extra of connection assetbus_default"):
        worker_access()


OIDC = {"bootstrap.servers": "b1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.client.id": "worker", "sasl.oauthbearer.client.secret": "from-the-vault",
        "sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,identityPoolId=pool-2"}
"""A kafka_default connection's extra for an OIDC broker, in librdkafka's names."""


def test_librdkafka_oauthbearer_becomes_the_oidc_token_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    _connections(monkeypatch, assetbus_default={"extra": {"kafka_conn_id": "kafka_default"}},
                 kafka_default={"extra": json.dumps(OIDC)})
    kafka = worker_access().kafka
    assert kafka is not None and (kafka.sasl_mechanism, kafka.sasl_oauth_provider) == ("OAUTHBEARER", "oidc")
    assert (kafka.sasl_oauth_token_url, kafka.sasl_oauth_client_id, kafka.sasl_oauth_scope) == (
        "https://idp.example/token", "worker", "kafka")
    assert kafka.sasl_oauth_client_secret is not None
    assert kafka.sasl_oauth_client_secret.get_secret_value() == "from-the-vault"
    assert kafka.sasl_oauth_extensions == (("identityPoolId", "pool-2"), ("logicalCluster", "lkc-1"))
    assert "from-the-vault" not in repr(kafka) and "from-the-vault" not in kafka.describe()


def test_an_incomplete_oauthbearer_config_is_refused_in_librdkafkas_names() -> None:
    config = {key: value for key, value in OIDC.items() if key != "sasl.oauthbearer.client.secret"}
    with pytest.raises(InvalidConnection, match=re.escape("sasl.oauthbearer.client.secret")) as refused:
        airflow_connection.kafka_from_config(config, "the Kafka connection kafka_default")
    assert "KAFKA_" not in str(refused.value)
    with pytest.raises(InvalidConnection, match=re.escape("sasl.oauthbearer.method='default'")):
        airflow_connection.kafka_from_config({**OIDC, "sasl.oauthbearer.method": "default"}, "k")


def test_client_properties_pass_through_as_kafka_properties_does() -> None:
    kafka = airflow_connection.kafka_from_config({"bootstrap.servers": "b:9092", "client.rack": "euw1-az1",
                                                  "request.timeout.ms": 45000, "group.id": "the-providers-own"}, "k")
    assert dict(kafka.properties) == {"client.rack": "euw1-az1", "request.timeout.ms": "45000"}
    assert kafka.client_kwargs("consumer")["client_rack"] == "euw1-az1"
    assert kafka.client_kwargs("producer")["request_timeout_ms"] == 45000


@pytest.mark.parametrize(("config", "named"), [
    ({"bootstrap.servers": "b:9092", "linger.ms": "5"}, "unknown Kafka client property 'linger.ms'"),
    ({"bootstrap.servers": "b:9092", "sasl.jaas.config": "x"}, "'sasl.jaas.config' is set by assetbus"),
    ({"bootstrap_server": "b:9092"}, "unknown Kafka setting 'bootstrap_server'"),
    ({"bootstrap.servers": "b:9092", "request.timeout.ms": "soon"}, "'request.timeout.ms' must be an integer"),
])
def test_an_unknown_or_misplaced_key_is_refused_by_name_never_dropped(config: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidConnection, match=re.escape(named)):
        airflow_connection.kafka_from_config(config, "the Kafka connection kafka_default")


def _answer(monkeypatch: pytest.MonkeyPatch) -> None:
    answer_token_requests(monkeypatch, lambda url, **kwargs: httpx.Response(200, json={
        "token": "t", "expires_at": "2099-01-01T00:00:00Z", "bootstrap_servers": "api-named:9092",
        "topic_prefix": "api-prefix"}))


def test_the_connection_wins_over_the_environment_and_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    _answer(monkeypatch)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    monkeypatch.setenv("ASSETBUS_TOPIC_PREFIX", "env-prefix")
    access = WorkerAccess("http://api:8321", "cred", kafka=airflow_connection.kafka_from_config(
        {"bootstrap.servers": "conn:9092"}, "test"), topic_prefix="conn-prefix")
    credentials = TokenSource(access).credentials(ATTEMPT)
    assert (credentials.kafka.bootstrap, credentials.topic_prefix) == ("conn:9092", "conn-prefix")


def test_without_kafka_in_the_connection_the_environment_then_the_api_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    _answer(monkeypatch)
    credentials = TokenSource(WorkerAccess("http://api:8321", "cred")).credentials(ATTEMPT)
    assert (credentials.kafka.bootstrap, credentials.topic_prefix) == ("api-named:9092", "api-prefix")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "env-user")  # the environment's SASL with the API's brokers
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "env-password")
    credentials = TokenSource(WorkerAccess("http://api:8321", "cred")).credentials(ATTEMPT)
    assert (credentials.kafka.bootstrap, credentials.kafka.sasl_username) == ("api-named:9092", "env-user")


def test_the_distribution_registers_the_provider_info_airflow_reads() -> None:
    (entry,) = [e for e in entry_points(group="apache_airflow_provider") if e.dist and e.dist.name == "assetbus-sdk"]
    info = entry.load()()
    assert info == get_provider_info()
    assert (info["package-name"], info["versions"]) == ("assetbus-sdk", [version("assetbus-sdk")])
    (connection,) = info["connection-types"]
    assert (connection["hook-class-name"], connection["connection-type"], connection["hook-name"]) == (
        "assetbus.producers.airflow.hook.AssetbusHook", "assetbus", "assetbus")
    assert info["hooks"] == [{"integration-name": "assetbus", "python-modules": ["assetbus.producers.airflow.hook"]}]
    assert info["operators"] == [{"integration-name": "assetbus",
                                  "python-modules": ["assetbus.producers.airflow.operator"]}]
    assert info["notifications"] == ["assetbus.producers.airflow.notifier.AssetbusNotifier"]
    option = info["config"]["assetbus"]["options"]["conn_id"]
    assert {"description", "version_added", "type", "example", "default"} <= option.keys()


CONN_FIELD_KEYS = {"label", "description", "schema"}
SCHEMA_TYPES = {"string", "integer", "boolean", "number", "object", "array", "null"}
STANDARD_FIELDS = {"description", "host", "port", "login", "password", "schema", "extra"}


def test_the_connection_form_is_declared_by_airflows_conventions() -> None:
    """Airflow (3.2 and newer) reads the form from the provider info without importing the hook: typed
    `conn-fields` (label, JSON-schema `schema`, kept in the extra under their names) and a kebab-case
    `ui-field-behaviour` for the standard fields; the hook no longer defines the deprecated form methods. The
    two fields are the extras the tests above read (`topic_prefix`, `kafka_conn_id`)."""
    (connection,) = get_provider_info()["connection-types"]
    fields = connection["conn-fields"]
    assert set(fields) == {"topic_prefix", "kafka_conn_id"}
    for name, field in fields.items():
        assert {"label", "schema"} <= set(field) <= CONN_FIELD_KEYS, name
        assert isinstance(field["label"], str) and field["label"], name
        types = field["schema"]["type"]
        assert set(types if isinstance(types, list) else [types]) <= SCHEMA_TYPES, name
        assert "string" in types and "format" not in field["schema"], f"{name} is plain text, not a secret"
    behaviour = connection["ui-field-behaviour"]
    assert set(behaviour) == {"hidden-fields", "relabeling", "placeholders"}
    assert set(behaviour["hidden-fields"]) <= STANDARD_FIELDS
    assert set(behaviour["relabeling"]) | set(behaviour["placeholders"]) <= STANDARD_FIELDS - set(
        behaviour["hidden-fields"])
    assert all(isinstance(text, str) for text in [*behaviour["relabeling"].values(),
                                                  *behaviour["placeholders"].values()])
    json.loads(behaviour["placeholders"]["extra"])
    hook_source = (Path(__file__).resolve().parents[4] / "producers" / "src" / "assetbus" / "producers" / "airflow"
                   / "hook.py").read_text()
    assert "def get_ui_field_behaviour" not in hook_source and "def get_connection_form_widgets" not in hook_source


def test_the_sdk_is_classified_as_an_airflow_provider() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[4] / "producers" / "pyproject.toml").read_text())
    assert "Framework :: Apache Airflow :: Provider" in pyproject["project"]["classifiers"]


def test_an_airflow_older_than_3_3_is_refused_with_one_message() -> None:
    assert mismatch({"apache-airflow-core": (3, 3), "apache-airflow-task-sdk": (1, 3)}) is None
    assert mismatch({"apache-airflow-task-sdk": (1, 4)}) is None
    reason = mismatch({"apache-airflow-core": (3, 2), "apache-airflow-task-sdk": (1, 2)})
    assert reason is not None and "needs Airflow >= 3.3" in reason
    assert "apache-airflow-core 3.2" in reason and "apache-airflow-task-sdk 1.2" in reason


def test_the_airflow_extra_pins_the_airflow_range_ci_tests() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[4] / "producers" / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["airflow"] == [
        f"apache-airflow-core>={MIN_AIRFLOW[0]}.{MIN_AIRFLOW[1]},<{MIN_AIRFLOW[0]}.{MIN_AIRFLOW[1] + 1}",
        f"apache-airflow-task-sdk>={MIN_TASK_SDK[0]}.{MIN_TASK_SDK[1]},<{MIN_TASK_SDK[0]}.{MIN_TASK_SDK[1] + 1}",
        "apache-airflow-providers-common-messaging>=2.0"]  # MessageQueueTrigger(scheme="assetbus"): queues.py
    assert f'AIRFLOW_VERSION ?= {MIN_AIRFLOW[0]}.{MIN_AIRFLOW[1]}.' in (
        Path(__file__).resolve().parents[4] / "Makefile").read_text()  # the Airflow the tests run is in the range
    assert MIN_TASK_SDK == (1, 3) and MIN_AIRFLOW == (3, 3)
    assert pyproject["project"]["entry-points"]["apache_airflow_provider"] == {
        "provider_info": "assetbus.producers.airflow.provider:get_provider_info"}
