"""Tokens are minted with an expiry for a task attempt or a DAG run, by function and by `assetbus token issue`."""

from __future__ import annotations

import json
import shlex
import time

import jwt
import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app
from assetbus.producers.tokens import dag_token, scoped_token, source_of, task_token, unverified_claims
from assetbus.schemas import SourceKind

SECRET = "unit-test-secret-of-at-least-32-bytes"


def test_a_task_token_names_the_attempt_and_expires() -> None:
    token = task_token(SECRET, "ingest", "run-1", "load", map_index=2, try_number=3, ttl_seconds=60)
    source = source_of(token)
    assert (source.kind, source.task_id, source.map_index, source.try_number) == (SourceKind.TASK, "load", 2, 3)
    expiry = unverified_claims(token)["exp"]
    assert isinstance(expiry, int) and 0 < expiry - time.time() <= 60


def test_a_dag_token_has_no_task_fields() -> None:
    source = source_of(dag_token(SECRET, "ingest", "run-1"))
    assert source.kind is SourceKind.DAG and (source.task_id, source.map_index, source.try_number) == (None,) * 3


def test_the_cli_signs_outlets_into_the_token_and_prints_export_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    result = CliRunner().invoke(app, ["token", "issue", "--dag", "ingest", "--run", "run-1", "--task", "load",
                                      "--try", "2", "--ttl", "600", "--format", "env",
                                      "--outlet", "orders=s3://bucket/orders/"])
    assert result.exit_code == 0, result.output
    env = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in result.output.splitlines())
    assert source_of(env["ASSETBUS_TOKEN"]).try_number == 2
    claims = jwt.decode(env["ASSETBUS_TOKEN"], SECRET, algorithms=["HS256"], audience="assetbus")
    assert claims["publish"] == [{"name": "orders", "uri": "s3://bucket/orders/"}]
    assert "ASSETBUS_OUTLETS" not in env  # the signed claim is the one rule, read by client and persister


def test_the_cli_inspects_a_token_and_fails_on_a_foreign_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    ours = CliRunner().invoke(app, ["token", "inspect", dag_token(SECRET, "ingest", "run-1")])
    assert ours.exit_code == 0 and json.loads(ours.output)["verified"] == "valid"
    assert json.loads(ours.output)["kind"] == "emitter (dag)"
    foreign = CliRunner().invoke(app, ["token", "inspect", dag_token("another-secret-of-32-bytes-or-more", "a", "b")])
    assert foreign.exit_code == 1 and "signature" in foreign.output


def test_the_cli_refuses_a_non_positive_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    result = CliRunner().invoke(app, ["token", "issue", "--dag", "ingest", "--run", "run-1", "--ttl", "0"])
    assert result.exit_code == 1


def test_a_scoped_token_names_its_subject_and_scope_and_no_attempt() -> None:
    token = scoped_token(SECRET, "operator:ana", "ui:read", ttl_seconds=60, extra_claims={"dag_id": "d"})
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="assetbus")
    assert (claims["sub"], claims["scope"], claims["dag_id"]) == ("operator:ana", "ui:read", "d")
    assert 0 < claims["exp"] - time.time() <= 60 and "run_id" not in claims
    with pytest.raises(ValueError, match="positive"):
        scoped_token(SECRET, "operator:ana", "ui:read", ttl_seconds=0)


@pytest.mark.parametrize(("command", "kind"), [
    (["token", "operator", "--name", "ana"], "operator"),
    (["token", "subscriber", "--dag", "daily", "--name", "svc"], "subscriber"),
    (["token", "worker"], "airflow-worker"),
])
def test_the_cli_inspects_tokens_that_name_no_attempt(monkeypatch: pytest.MonkeyPatch, command: list[str],
                                                       kind: str) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    minted = CliRunner().invoke(app, command)
    assert minted.exit_code == 0, minted.output
    inspected = CliRunner().invoke(app, ["token", "inspect", minted.output.strip()])
    assert inspected.exit_code == 0, inspected.output
    report = json.loads(inspected.output)
    assert (report["kind"], report["verified"]) == (kind, "valid")
