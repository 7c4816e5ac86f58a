"""Attested mode on the worker: the token comes through Airflow's state store channel, never from a credential
request; a worker that bypasses the api-server gets nothing; a retry callback falls back to its DAG run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from assetbus.producers.airflow import Attempt, TokenRequestFailed, TokenSource, WorkerAccess
from assetbus.producers.airflow import credentials as airflow_credentials
from assetbus.producers.airflow.attestation import ATTESTATION_KEY, identity_mode
from tests.unit.producers.airflow.token_api import answer_token_requests

ANSWER = {"token": "attested-token", "expires_at": "2099-01-01T00:00:00Z", "bootstrap_servers": "kafka:9092",
          "topic_prefix": "assetbus"}
ACCESS = WorkerAccess("http://api:8321", "worker-credential")


class Store:
    """Airflow's `task_state_store` as a task sees it: `get(key)` answers what the api-server's backend says."""

    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error
        self.read: list[str] = []

    def get(self, key: str) -> Any:
        self.read.append(key)
        if self.error is not None:
            raise self.error
        return self.answer


def _attempt(store: Store | None, *, callback: bool = False) -> Attempt:
    return Attempt(dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=1,
                   ti_id="0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c", callback=callback, store=store)


@pytest.fixture(autouse=True)
def attested(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    monkeypatch.delenv("ASSETBUS_AIRFLOW_IDENTITY", raising=False)
    monkeypatch.setattr(airflow_credentials, "worker_state_store_backend", lambda: "")
    sent: list[dict[str, Any]] = []

    def post(url: str, **kwargs: Any) -> httpx.Response:
        sent.append({"url": url, **kwargs})
        return httpx.Response(200, json={**ANSWER, "token": "dag-run-token"})

    answer_token_requests(monkeypatch, post)
    return sent


def test_attested_is_the_default_and_credential_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSETBUS_AIRFLOW_IDENTITY", raising=False)
    assert identity_mode() == ("attested", "the default (ASSETBUS_AIRFLOW_IDENTITY is not set)")
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")
    assert identity_mode()[0] == "credential"
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "trusted")
    with pytest.raises(ValueError, match="expected 'attested'"):
        identity_mode()


def test_the_token_is_read_through_airflows_channel_and_no_credential_is_sent(
        attested: list[dict[str, Any]]) -> None:
    store = Store(ANSWER)
    credentials = TokenSource(ACCESS).credentials(_attempt(store))
    assert (credentials.token, credentials.topic_prefix) == ("attested-token", "assetbus")
    assert store.read == [ATTESTATION_KEY]
    assert attested == []  # the worker credential asked for nothing


def test_a_worker_backend_bypassing_the_api_server_is_refused_before_anything_is_asked(
        monkeypatch: pytest.MonkeyPatch, attested: list[dict[str, Any]]) -> None:
    monkeypatch.setattr(airflow_credentials, "worker_state_store_backend", lambda: "my.WorkerBackend")
    store = Store(ANSWER)
    with pytest.raises(TokenRequestFailed, match=r"\[workers\] state_store_backend = 'my.WorkerBackend'") as raised:
        TokenSource(ACCESS).credentials(_attempt(store))
    assert raised.value.code == "worker_backend_configured"
    assert store.read == [] and attested == []


def test_an_api_server_without_the_backend_is_named_not_bypassed(attested: list[dict[str, Any]]) -> None:
    with pytest.raises(TokenRequestFailed, match="AssetbusStoreBackend") as raised:
        TokenSource(ACCESS).credentials(_attempt(Store(None)))
    assert raised.value.code == "attestation_unavailable" and attested == []


def test_the_api_servers_refusal_reaches_the_task_with_its_reason() -> None:
    relayed = SimpleNamespace(detail={"status_code": 403, "message": "Forbidden", "detail": {
        "detail": {"reason": "attempt_ended", "message": "try 1 ended more than 120s ago"}}})
    error = RuntimeError("API_SERVER_ERROR")
    error.error = relayed  # type: ignore[attr-defined]  # AirflowRuntimeError's shape
    with pytest.raises(TokenRequestFailed, match="attempt_ended: try 1 ended") as raised:
        TokenSource(ACCESS).credentials(_attempt(Store(error=error)))
    assert raised.value.code == "attempt_ended"


def test_a_retry_callback_that_airflow_no_longer_attests_emits_as_its_dag_run(
        attested: list[dict[str, Any]]) -> None:
    credentials = TokenSource(ACCESS).credentials(_attempt(Store(None), callback=True))
    assert credentials.token == "dag-run-token"
    assert attested[0]["json"] == {"kind": "dag", "dag_id": "ingest", "run_id": "r1"}
    assert attested[0]["headers"]["Authorization"] == "Bearer worker-credential"
