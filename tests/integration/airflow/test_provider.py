"""assetbus as an Airflow provider, in a real Airflow 3.3: `airflow providers list` shows it, `airflow connections
test` checks an `assetbus` connection (the API, the worker credential, Kafka), and DAGs whose workers hold only
Airflow connections (no ASSETBUS_* or KAFKA_* variables) emit with `AssetbusEmitOperator`."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from importlib.metadata import version

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow import airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.infra.ports import free_port
from examples.airflow import connections
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import events_of

TEST_CONNECTION = {"AIRFLOW__CORE__TEST_CONNECTION": "Enabled"}
"""Airflow 3 disables connection tests unless `[core] test_connection = Enabled` (the CLI checks it too)."""


def airflow(stack: AirflowStack, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`airflow ARGS` as the stack's components run it (its home, metadata DB and environment)."""
    return subprocess.run([str(airflow_bin()), *args], env={**stack.airflow.env(), **env}, capture_output=True,
                          text=True, timeout=300, check=False)


def without_kafka_variables(stack: AirflowStack) -> dict[str, str]:
    """The stack's Airflow environment without KAFKA_*: only the connection and the API name Kafka."""
    return {k: v for k, v in stack.airflow.env().items() if not k.startswith("KAFKA_")}


def connections_test(stack: AirflowStack, conn_id: str) -> subprocess.CompletedProcess[str]:
    """`airflow connections test CONN_ID`, its lines unwrapped (rich wraps the message of a failure)."""
    done = subprocess.run([str(airflow_bin()), "connections", "test", conn_id],
                          env={**without_kafka_variables(stack), **TEST_CONNECTION}, capture_output=True, text=True,
                          timeout=300, check=False)
    done.stdout = " ".join(done.stdout.split())
    return done


@pytest.fixture(scope="module")
def by_reference(airflow_stack: AirflowStack) -> str:
    """The documented connections (examples/airflow/connections.py): an `assetbus` connection naming the topic
    prefix and, by reference, a kafka_default-style connection."""
    for conn_id, definition in [
            ("kafka_by_reference", connections.kafka_default(airflow_stack.bootstrap_servers)),
            ("assetbus_by_reference", connections.assetbus_default(
                airflow_stack.api_url, airflow_stack.worker_credential, airflow_stack.topic_prefix))]:
        definition = definition.replace('"kafka_default"', '"kafka_by_reference"')
        done = airflow(airflow_stack, "connections", "add", conn_id, "--conn-json", definition)
        assert done.returncode == 0, done.stderr[-2000:]
    return "assetbus_by_reference"


def test_airflow_lists_the_assetbus_provider(airflow_stack: AirflowStack) -> None:
    done = airflow(airflow_stack, "providers", "list", "--output", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    providers = {p["package_name"]: p for p in json.loads(done.stdout)}
    assert providers["assetbus-sdk"]["version"] == version("assetbus-sdk")
    hooks = airflow(airflow_stack, "providers", "hooks", "--output", "json")
    assert {"connection_type": "assetbus", "class": "assetbus.producers.airflow.hook.AssetbusHook",
            "package_name": "assetbus-sdk"}.items() <= next(
        h for h in json.loads(hooks.stdout) if h["connection_type"] == "assetbus").items()


def test_connections_test_passes_on_the_workers_connection(airflow_stack: AirflowStack) -> None:
    done = airflow(airflow_stack, "connections", "test", "assetbus_default", **TEST_CONNECTION)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "Connection success" in done.stdout
    # the message the CLI does not print on success, from the hook in Airflow's venv (the connection from its
    # metadata database, as the CLI reads it)
    said = subprocess.run([str(airflow_bin().parent / "python"), "-c", "from assetbus.producers.airflow.hook import "
                           "AssetbusHook; print(AssetbusHook().test_connection())"],
                          env={**without_kafka_variables(airflow_stack), "_AIRFLOW_PROCESS_CONTEXT": "server"},
                          capture_output=True, text=True, timeout=120, check=False).stdout
    # no Kafka in the connection: a task's emitter uses the brokers and prefix the API names, and those are checked
    assert f"a task's emitter reaches Kafka at {airflow_stack.bootstrap_servers}" in said, said
    assert f"the topics of prefix {airflow_stack.topic_prefix!r}" in said
    assert "not for the triggerer: the triggerer has no Kafka for assetbus" in said


def test_connections_test_fails_on_a_mistyped_prefix_without_kafka_settings_naming_where_each_came_from(
        airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    conn_id = f"assetbus_typo_{uuid.uuid4().hex[:6]}"
    airflow_api.add_connection(conn_id, {"conn_type": "assetbus", "host": airflow_stack.api_url,
                                            "password": airflow_stack.worker_credential,
                                            "extra": {"topic_prefix": "ordrs"}})
    failed = connections_test(airflow_stack, conn_id)
    assert failed.returncode == 1, failed.stdout
    assert "has no topic ordrs.emissions, ordrs.receipts, ordrs.asset-events" in failed.stdout, failed.stdout
    assert f"the `topic_prefix` extra of connection {conn_id}" in failed.stdout
    assert f"the brokers the assetbus API at {airflow_stack.api_url} names" in failed.stdout


def test_connections_test_fails_on_kafka_settings_that_do_not_connect(airflow_stack: AirflowStack,
                                                                      airflow_api: AirflowApi) -> None:
    conn_id = f"assetbus_nobroker_{uuid.uuid4().hex[:6]}"
    nobody = f"127.0.0.1:{free_port()}"
    airflow_api.add_connection(conn_id, {"conn_type": "assetbus", "host": airflow_stack.api_url,
                                            "password": airflow_stack.worker_credential,
                                            "extra": {"kafka": {"bootstrap_servers": nobody}}})
    failed = connections_test(airflow_stack, conn_id)
    assert failed.returncode == 1, failed.stdout
    assert f"Kafka at {nobody} over PLAINTEXT, which a task's emitter will use" in failed.stdout, failed.stdout
    assert f"the `kafka` (or `kafka_conn_id`) extra of connection {conn_id}" in failed.stdout


def test_connections_test_checks_kafka_named_by_reference(airflow_stack: AirflowStack, airflow_api: AirflowApi,
                                                          by_reference: str) -> None:
    done = airflow(airflow_stack, "connections", "test", by_reference, **TEST_CONNECTION)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    wrong_prefix = f"assetbus_wrong_prefix_{uuid.uuid4().hex[:6]}"
    airflow_api.add_connection(wrong_prefix, {
        "conn_type": "assetbus", "host": airflow_stack.api_url, "password": airflow_stack.worker_credential,
        "extra": {"topic_prefix": "no-such-prefix", "kafka_conn_id": "kafka_by_reference"}})
    failed = connections_test(airflow_stack, wrong_prefix)
    assert failed.returncode == 1 and "has no topic no-such-prefix.emissions" in failed.stdout, failed.stdout


def test_a_kafka_default_in_librdkafkas_names_is_read_back_faithfully(airflow_stack: AirflowStack,
                                                                     airflow_api: AirflowApi) -> None:
    """OAUTHBEARER (OIDC) and a pass-through property read back from Airflow's own connection store; a key
    assetbus does not take fails the connection test by name."""
    suffix = uuid.uuid4().hex[:6]
    airflow_api.add_connection(f"kafka_oidc_{suffix}", {"conn_type": "kafka", "extra": {
        "bootstrap.servers": "b1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.client.id": "worker", "sasl.oauthbearer.client.secret": "s3cret",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1", "client.rack": "euw1-az1", "group.id": "theirs"}})
    airflow_api.add_connection(f"assetbus_oidc_{suffix}", {
        "conn_type": "assetbus", "host": airflow_stack.api_url, "password": airflow_stack.worker_credential,
        "extra": {"kafka_conn_id": f"kafka_oidc_{suffix}"}})
    script = ("from assetbus.producers.airflow.connection import worker_access; "
              f"k = worker_access('assetbus_oidc_{suffix}').kafka; "
              "print(k.sasl_mechanism, k.sasl_oauth_provider, k.sasl_oauth_token_url, k.sasl_oauth_client_id, "
              "dict(k.sasl_oauth_extensions), dict(k.properties))")
    read = subprocess.run([str(airflow_bin().parent / "python"), "-c", script],
                          env={**without_kafka_variables(airflow_stack), "_AIRFLOW_PROCESS_CONTEXT": "server"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert ("OAUTHBEARER oidc https://idp.example/token worker {'logicalCluster': 'lkc-1'} "
            "{'client.rack': 'euw1-az1'}") in read.stdout, read.stdout + read.stderr
    airflow_api.add_connection(f"kafka_lingering_{suffix}", {"conn_type": "kafka", "extra": {
        "bootstrap.servers": airflow_stack.bootstrap_servers, "linger.ms": "5"}})
    airflow_api.add_connection(f"assetbus_lingering_{suffix}", {
        "conn_type": "assetbus", "host": airflow_stack.api_url, "password": airflow_stack.worker_credential,
        "extra": {"kafka_conn_id": f"kafka_lingering_{suffix}"}})
    refused = connections_test(airflow_stack, f"assetbus_lingering_{suffix}")
    assert refused.returncode == 1
    assert f"the Kafka connection kafka_lingering_{suffix}: unknown Kafka client property 'linger.ms'" in \
        refused.stdout, refused.stdout


def test_connections_test_fails_on_a_credential_the_api_refuses(airflow_stack: AirflowStack,
                                                                airflow_api: AirflowApi) -> None:
    conn_id = f"assetbus_wrong_{uuid.uuid4().hex[:6]}"
    airflow_api.add_connection(conn_id, {"conn_type": "assetbus", "host": airflow_stack.api_url,
                                            "password": "not-a-worker-credential"})
    done = airflow(airflow_stack, "connections", "test", conn_id, **TEST_CONNECTION)
    assert done.returncode == 1
    assert "refuses the worker credential: 401 invalid_token" in done.stdout, done.stdout


def _sync_when_parsed(stack: AirflowStack, api: AirflowApi, *dag_ids: str) -> None:
    deadline = time.monotonic() + 180
    while not set(dag_ids) <= {d["dag_id"] for d in api.get("/dags", limit=1000)["dags"]}:
        assert time.monotonic() < deadline, f"Airflow did not parse {dag_ids} in 180 s"
        time.sleep(1.0)  # polling a condition: Airflow's dag-processor rescans every 5 s
    stack.cli("airflow", "sync", *(arg for dag_id in dag_ids for arg in ("--dag", dag_id)))


@pytest.fixture(scope="module")
def synced(airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    _sync_when_parsed(airflow_stack, airflow_api, "export_orders", "export_by_reference")


async def test_the_operator_emits_with_only_the_connection(synced: None, airflow_api: AirflowApi,
                                                          stack_engine: AsyncEngine) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger("export_orders", run_id, {"day": "2026-10-01"})
    assert airflow_api.wait_run("export_orders", run_id, timeout_s=240)["state"] == "success"
    receipt = airflow_api.xcom("export_orders", run_id, "announce")
    assert receipt["status"] == "accepted"
    (event,) = await events_of(stack_engine, "export_orders", run_id)
    assert (event["id"], event["asset"], event["partition_key"], event["dedupe_key"], event["task_id"]) == (
        receipt["event_id"], "airflow_demo.order_exports", "2026-10-01", "export-2026-10-01", "announce")
    assert event["extra"] == {"path": "s3://example/order_exports/2026-10-01/", "run": run_id}


async def test_kafka_and_the_topic_prefix_come_from_the_connection(synced: None, by_reference: str,
                                                                  airflow_api: AirflowApi,
                                                                  stack_engine: AsyncEngine) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger("export_by_reference", run_id, {"partition": "p-7"})
    assert airflow_api.wait_run("export_by_reference", run_id, timeout_s=240)["state"] == "success"
    assert airflow_api.xcom("export_by_reference", run_id, "environment") == []
    (event,) = await events_of(stack_engine, "export_by_reference", run_id)
    assert (event["asset"], event["partition_key"], event["task_id"], event["extra"]) == (
        "airflow_test.by_reference", "p-7", "announce", {"run": run_id})
