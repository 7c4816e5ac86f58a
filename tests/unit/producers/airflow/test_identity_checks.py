"""What the api-server says at start about its backend (its key, the assetbus API, their match), and what a
worker's connection test says about its identity mode."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import HTTPException

from assetbus.producers.airflow import identity_checks
from assetbus.producers.airflow.attestation import ATTESTATION_KEY, AttestationRefused
from assetbus.producers.airflow.identity_checks import backend_findings, identity_report, key_findings
from assetbus.producers.airflow.store_backend import AssetbusStoreBackend
from assetbus.producers.tokens import unverified_claims
from tests.helpers import TaskScope
from tests.unit.producers.airflow.token_api import answer_token_requests

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def _api(monkeypatch: pytest.MonkeyPatch, status: int, code: str) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    def answer(url: str, **kwargs: Any) -> httpx.Response:
        sent.append({"url": url, **kwargs})
        if url.endswith("/healthz"):
            return httpx.Response(200, json={"status": "ok"})
        return httpx.Response(status, json={"code": code, "message": f"the {code} message"})

    answer_token_requests(monkeypatch, answer)
    return sent


def test_a_key_the_api_verifies_is_reported_ok_and_the_probe_can_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _api(monkeypatch, 403, "insufficient_scope")
    found = key_findings(SECRET, "http://assetbus:8321")
    assert [(f.name, f.ok) for f in found] == [("assetbus API", True), ("signing key", True)]
    probe = unverified_claims(sent[1]["headers"]["Authorization"].removeprefix("Bearer "))
    assert probe["scope"] == "" and probe["publish"] == []


def test_a_key_the_api_refuses_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _api(monkeypatch, 401, "invalid_token")
    key = key_findings(SECRET, "http://assetbus:8321")[1]
    assert not key.ok and "401 invalid_token" in key.detail and "JWKS" in key.fix


def test_no_key_is_one_finding_naming_keygen(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSETBUS_TOKEN_SIGNING_KEY", "ASSETBUS_TOKEN_SECRET"):
        monkeypatch.delenv(name, raising=False)
    (finding,) = backend_findings()
    assert not finding.ok and "ASSETBUS_TOKEN_SIGNING_KEY" in finding.detail
    assert "assetbus token keygen" in finding.fix


def test_a_backend_without_a_key_answers_every_call_with_its_reason_not_a_500(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSETBUS_TOKEN_SIGNING_KEY", "ASSETBUS_TOKEN_SECRET"):
        monkeypatch.delenv(name, raising=False)
    backend = AssetbusStoreBackend("http://assetbus:8321")
    for key in (ATTESTATION_KEY, "checkpoint"):
        with pytest.raises(HTTPException) as raised:
            backend.get(TaskScope("d", "r", "t"), key)
        detail: dict[str, str] = raised.value.detail  # type: ignore[assignment]
        assert (raised.value.status_code, detail["reason"]) == (503, "backend_cannot_mint")
        assert "ASSETBUS_TOKEN_SIGNING_KEY" in detail["message"]


def test_the_worker_report_names_the_mode_and_refuses_a_bypassing_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity_checks, "worker_state_store_backend", lambda: "")
    monkeypatch.delenv("ASSETBUS_AIRFLOW_IDENTITY", raising=False)
    assert identity_report().startswith("identity mode attested (the default")
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")
    assert identity_report().startswith("identity mode credential")
    monkeypatch.delenv("ASSETBUS_AIRFLOW_IDENTITY")
    monkeypatch.setattr(identity_checks, "worker_state_store_backend", lambda: "my.WorkerBackend")
    with pytest.raises(AttestationRefused, match=r"\[workers\] state_store_backend = 'my.WorkerBackend'"):
        identity_report()
    monkeypatch.setenv("ASSETBUS_AIRFLOW_IDENTITY", "credential")
    assert identity_report().startswith("identity mode credential")
