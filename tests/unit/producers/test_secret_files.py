"""`NAME_FILE=/path` stands for `NAME`, for every secret and key of ours: one mechanism, at each edge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from assetbus.producers.airflow.attestation import ATTESTATION_KEY, AttestedAttempt
from assetbus.producers.airflow.store_backend import AssetbusStoreBackend
from assetbus.producers.secret_files import SecretFileError, expand_file_variables
from tests.helpers import TaskScope
from tests.unit.producers.airflow.token_api import answer_token_requests

SECRET = "a-secret-mounted-as-a-file-of-32-bytes!"


def test_a_file_variable_sets_its_variable_without_the_trailing_newline(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(SECRET + "\n")
    env = {"ASSETBUS_TOKEN_SECRET_FILE": str(tmp_path / "secret"), "KAFKA_PROPERTIES_FILE": "client.properties",
           "OTHER_FILE": str(tmp_path / "secret")}
    assert expand_file_variables(env) == ["ASSETBUS_TOKEN_SECRET"]
    assert env["ASSETBUS_TOKEN_SECRET"] == SECRET
    assert "KAFKA_PROPERTIES" not in env and "OTHER" not in env  # a file of its own; not one of ours
    assert expand_file_variables(env) == []  # again: nothing new, no conflict with what it set


def test_both_set_or_an_unreadable_file_is_one_error_naming_the_variable_not_the_secret(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(SECRET)
    with pytest.raises(SecretFileError, match="both ASSETBUS_AIRFLOW_PASSWORD and ASSETBUS_AIRFLOW_PASSWORD_FILE"):
        expand_file_variables({"ASSETBUS_AIRFLOW_PASSWORD": "other",
                               "ASSETBUS_AIRFLOW_PASSWORD_FILE": str(tmp_path / "secret")})
    with pytest.raises(SecretFileError, match="KAFKA_SASL_PASSWORD_FILE=/no/such: cannot read it") as raised:
        expand_file_variables({"KAFKA_SASL_PASSWORD_FILE": "/no/such"})
    assert SECRET not in str(raised.value)


def test_the_cli_reads_the_token_secret_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(SECRET + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSETBUS_TOKEN")}
    env.update(ASSETBUS_TOKEN_SECRET_FILE=str(tmp_path / "secret"), ASSETBUS_HOME=str(tmp_path / "home"))
    done = subprocess.run([str(Path(sys.executable).parent / "assetbus"), "token", "issue", "--dag", "d", "--run",
                           "r", "--task", "t"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert jwt.decode(done.stdout.strip(), SECRET, algorithms=["HS256"], audience="assetbus")["dag_id"] == "d"


def test_the_store_backend_reads_its_key_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret").write_text(SECRET)
    for name in ("ASSETBUS_TOKEN_SIGNING_KEY", "ASSETBUS_TOKEN_SECRET"):
        monkeypatch.setenv(name, "")  # unset, and put back as it was afterwards (the backend sets the secret)
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET_FILE", str(tmp_path / "secret"))
    sent: list[str] = []

    def minter(url: str, **kwargs: Any) -> httpx.Response:
        sent.append(kwargs["headers"]["Authorization"].removeprefix("Bearer "))
        return httpx.Response(200, json={"token": "t", "expires_at": "2099-01-01T00:00:00Z",
                                         "bootstrap_servers": "kafka:9092", "topic_prefix": "assetbus"})

    answer_token_requests(monkeypatch, minter)
    running = AttestedAttempt("0199c2b6-8f5e-7a3c-9d41-5b6e7f8a9b0c", "d", "r", "t", -1, 1, "running", None)
    backend = AssetbusStoreBackend("http://assetbus:8321", attempts=lambda scope, session: running)
    assert backend.cannot_mint is None
    backend.get(TaskScope("d", "r", "t"), ATTESTATION_KEY)
    # the attestation it sent the minter is signed with the file's secret
    assert jwt.decode(sent[0], SECRET, algorithms=["HS256"], audience="assetbus")["scope"] == "airflow:attested"
