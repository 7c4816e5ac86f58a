"""A task whose emitter cannot start on Kafka is told the prefix and which connection set what it tried."""

from __future__ import annotations

import gc
import json
import logging
from types import SimpleNamespace

import httpx
import pytest

from assetbus.infra.ports import free_port
from assetbus.producers import task_token
from assetbus.producers.airflow import Attempt
from assetbus.producers.airflow import connection as airflow_connection
from assetbus.producers.airflow.emit import attempt_context
from assetbus.producers.assets import Asset
from assetbus.producers.errors import BrokerUnavailable
from tests.unit.producers.airflow.token_api import answer_token_requests

ATTEMPT = Attempt(dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1,
                  ti_id="0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c")


def test_the_emitters_start_error_names_the_topic_prefix_and_the_connection(monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "ASSETBUS_TOPIC_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")  # the token asked with the worker credential
    nobody = f"127.0.0.1:{free_port()}"  # no broker listens there
    gc.collect()  # what earlier tests left behind is collected now, not in the check below
    connection = SimpleNamespace(host="http://api:8321", port=None, schema=None, password="cred", extra=json.dumps(
        {"topic_prefix": "ordrs", "kafka": {"bootstrap_servers": nobody}}))
    monkeypatch.setattr(airflow_connection, "_airflow_connection", {"assetbus_unreachable": connection}.get)
    answer_token_requests(monkeypatch, lambda url, **kwargs: httpx.Response(200, json={
        "token": task_token("k" * 32, "ingest", "r1", "load"), "expires_at": "2099-01-01T00:00:00Z",
        "bootstrap_servers": "api-named:9092", "topic_prefix": "api-prefix"}))
    with pytest.raises(BrokerUnavailable) as failed, attempt_context(ATTEMPT, "assetbus_unreachable"):
        Asset("orders", "s3://x/orders").emit(partition_key="p")
    message = str(failed.value)
    assert f"cannot start the emitter on {nobody} over PLAINTEXT for topic prefix 'ordrs'" in message
    assert "the `kafka` (or `kafka_conn_id`) extra of connection assetbus_unreachable" in message
    assert "the `topic_prefix` extra of connection assetbus_unreachable" in message
    assert "KAFKA_BOOTSTRAP_SERVERS" not in message
    del failed  # its traceback holds the failed start's frames
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()  # a client left open by the failed start says so when collected
    assert not [r.getMessage() for r in caplog.records if "Unclosed AIOKafka" in r.getMessage()]
