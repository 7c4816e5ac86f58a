"""A worker asks for its attempt's token with the deployment's worker credential, found in the Airflow connection
`assetbus_default` (else the environment); without one it sends nothing and says where to put it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from assetbus.producers.airflow import Attempt, TokenRequestFailed, TokenSource, WorkerAccess, worker_access
from assetbus.producers.airflow import connection as airflow_connection
from tests.unit.producers.airflow.token_api import answer_token_requests

ATTEMPT = Attempt(dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1,
                  ti_id="0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c")


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSETBUS_API_URL", "ASSETBUS_AIRFLOW_WORKER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")  # attested mode: test_attested_tokens.py


def _connection(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> None:
    found = SimpleNamespace(**{"host": None, "port": None, "schema": None, "password": None, **fields})
    monkeypatch.setattr(airflow_connection, "_airflow_connection", lambda conn_id: found)


def test_the_connection_gives_the_api_and_the_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, host="assetbus-api", port=8321, password="worker-credential")
    access = worker_access()
    assert (access.api_url, access.credential, access.source) == (
        "http://assetbus-api:8321", "worker-credential", "connection assetbus_default")
    _connection(monkeypatch, host="https://assetbus.example.com/", password="worker-credential")
    assert worker_access().api_url == "https://assetbus.example.com"


def test_without_the_connection_the_environment_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(airflow_connection, "_airflow_connection", lambda conn_id: None)
    assert worker_access() == WorkerAccess("http://127.0.0.1:8321", None)
    monkeypatch.setenv("ASSETBUS_API_URL", "http://api:9000/")
    monkeypatch.setenv("ASSETBUS_AIRFLOW_WORKER_TOKEN", "from-env")
    assert worker_access() == WorkerAccess("http://api:9000", "from-env")
    _connection(monkeypatch, host="api-from-conn")  # a connection without a password keeps the env's
    assert (worker_access().api_url, worker_access().credential) == ("http://api-from-conn", "from-env")


def test_no_credential_sends_no_request_and_says_where_to_put_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> httpx.Response:
        raise AssertionError("no request without a credential")

    answer_token_requests(monkeypatch, refuse)
    with pytest.raises(TokenRequestFailed, match="assetbus_default") as raised:
        TokenSource(WorkerAccess("http://api:8321", None)).credentials(ATTEMPT)
    assert raised.value.code == "missing_token"


def test_the_token_request_carries_the_credential_as_its_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    def post(url: str, **kwargs: Any) -> httpx.Response:
        sent.append({"url": url, **kwargs})
        return httpx.Response(200, json={"token": "t", "expires_at": "2099-01-01T00:00:00Z",
                                         "bootstrap_servers": "kafka:9092", "topic_prefix": "assetbus"})

    answer_token_requests(monkeypatch, post)
    credentials = TokenSource(WorkerAccess("http://api:8321", "worker-credential")).credentials(ATTEMPT)
    assert credentials.token == "t"
    assert sent[0]["url"] == "http://api:8321/airflow/tokens"
    assert sent[0]["headers"]["Authorization"] == "Bearer worker-credential"
    assert sent[0]["json"]["ti_id"] == ATTEMPT.ti_id


def test_a_refused_credential_names_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    answer_token_requests(monkeypatch, lambda url, **kwargs: httpx.Response(
        403, json={"code": "insufficient_scope", "message": "the token lacks scope 'airflow:worker'"}))
    with pytest.raises(TokenRequestFailed, match="assetbus token worker") as raised:
        TokenSource(WorkerAccess("http://api:8321", "an-emitter-token", "connection assetbus_default")
                    ).credentials(ATTEMPT)
    assert raised.value.code == "insufficient_scope" and not raised.value.retriable
