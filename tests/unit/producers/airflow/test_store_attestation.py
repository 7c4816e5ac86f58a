"""The backend's side of attested tokens: the attempt Airflow's metadata names, signed as an attestation that can
only be exchanged, sent to the minter; the reserved key cannot be written."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import HTTPException

from assetbus.producers.airflow.attestation import ATTESTATION_KEY, AttestedAttempt
from assetbus.producers.airflow.store_backend import AssetbusStoreBackend
from assetbus.producers.tokens import unverified_claims
from tests.helpers import TaskScope
from tests.unit.producers.airflow.token_api import answer_token_requests

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"
SCOPE = TaskScope("ingest", "r1", "load", 2)
RUNNING = AttestedAttempt("0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c", "ingest", "r1", "load", 2, 3, "running", None)


def _reason(error: HTTPException) -> str:
    detail: dict[str, str] = error.detail  # type: ignore[assignment]  # Airflow's {"reason", "message"}
    return detail["reason"]


def _backend(found: AttestedAttempt | None = RUNNING) -> AssetbusStoreBackend:
    return AssetbusStoreBackend("http://assetbus:8321", SECRET, attempts=lambda scope, session: found)


def test_the_reserved_key_reads_the_token_the_minter_gave_for_the_attestation(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    def minter(url: str, **kwargs: Any) -> httpx.Response:
        sent.append({"url": url, **kwargs})
        return httpx.Response(200, json={"token": "emission", "expires_at": "2099-01-01T00:00:00Z",
                                         "bootstrap_servers": "kafka:9092", "topic_prefix": "assetbus"})

    answer_token_requests(monkeypatch, minter)
    answer = _backend().get(SCOPE, ATTESTATION_KEY)
    assert answer is not None and json.loads(answer)["token"] == "emission"
    assert sent[0]["url"] == "http://assetbus:8321/airflow/tokens"
    attestation = unverified_claims(sent[0]["headers"]["Authorization"].removeprefix("Bearer "))
    assert attestation["scope"] == "airflow:attested"  # no emit, no ti:self: it can only be exchanged
    assert (attestation["dag_id"], attestation["task_id"], attestation["map_index"], attestation["try_number"]) == \
        ("ingest", "load", 2, 3)  # the try Airflow's metadata holds
    assert (attestation["ti_id"], attestation["ti_state"], attestation["ended_at"]) == (RUNNING.ti_id, "running", None)
    assert attestation["exp"] - attestation["iat"] == 60


def test_a_refusal_of_the_minter_keeps_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    answer_token_requests(monkeypatch, lambda url, **kwargs: httpx.Response(
        403, json={"code": "attempt_ended", "message": "ended more than 120s ago"}))
    with pytest.raises(HTTPException) as raised:  # Airflow's error shape, as its route answers it
        _backend().get(SCOPE, ATTESTATION_KEY)
    assert (raised.value.status_code, _reason(raised.value)) == (403, "attempt_ended")


def test_no_task_instance_no_request(monkeypatch: pytest.MonkeyPatch) -> None:
    answer_token_requests(monkeypatch, lambda url, **kwargs: pytest.fail("nothing is asked of the minter"))
    with pytest.raises(HTTPException) as raised:
        _backend(None).get(SCOPE, ATTESTATION_KEY)
    assert _reason(raised.value) == "attempt_not_running"


@pytest.mark.parametrize("call", ["set", "delete"])
def test_the_reserved_key_cannot_be_written(call: str) -> None:
    backend = _backend()
    with pytest.raises(HTTPException) as raised:
        if call == "set":
            backend.set(SCOPE, ATTESTATION_KEY, json.dumps("forged"))
        else:
            backend.delete(SCOPE, ATTESTATION_KEY)
    assert (raised.value.status_code, _reason(raised.value)) == (403, "reserved_key")
