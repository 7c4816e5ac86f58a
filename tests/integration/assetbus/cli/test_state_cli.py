"""`assetbus state ...` and `assetbus assets attach ...` for operators, against the test's database."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app


@pytest.fixture
def cli(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("DATABASE_URL", db_url)
    return CliRunner()


TASK = ["--dag", "ingest", "--run", "run-1", "--task", "load"]


def test_operators_set_read_and_clear_task_state(cli: CliRunner) -> None:
    assert cli.invoke(app, ["state", "set", *TASK, "checkpoint", "41"]).exit_code == 0
    assert cli.invoke(app, ["state", "set", *TASK, "checkpoint", "42", "--if-version", "1"]).exit_code == 0
    stale = cli.invoke(app, ["state", "set", *TASK, "checkpoint", "43", "--if-version", "1"])
    assert stale.exit_code == 1 and "version 2" in stale.output
    got = cli.invoke(app, ["state", "get", *TASK, "checkpoint"])
    assert got.exit_code == 0 and got.output.strip() == "42"
    listed = cli.invoke(app, ["state", "get", *TASK])
    assert "checkpoint" in listed.output and "42" in listed.output
    assert "deleted 1" in cli.invoke(app, ["state", "clear", *TASK, "checkpoint"]).output
    assert cli.invoke(app, ["state", "get", *TASK, "checkpoint"]).exit_code == 1


def test_clear_all_map_indices_and_purge_run(cli: CliRunner) -> None:
    for index in ("0", "1"):
        cli.invoke(app, ["state", "set", *TASK, "--map-index", index, "k", '"v"'])
    cleared = cli.invoke(app, ["state", "clear", *TASK, "--map-index", "0", "--all-map-indices"])
    assert "deleted 2" in cleared.output
    cli.invoke(app, ["state", "set", *TASK, "k", "--text", "v"])
    cli.invoke(app, ["state", "set", "--dag", "ingest", "--run", "run-1", "--task", "report", "k", "1"])
    purged = cli.invoke(app, ["state", "purge-run", "--dag", "ingest", "--run", "run-1"])
    assert purged.exit_code == 0 and "deleted 2" in purged.output


def test_asset_state_and_attachments(cli: CliRunner) -> None:
    assert cli.invoke(app, ["assets", "register", "orders", "s3://bucket/orders/"]).exit_code == 0
    attached = cli.invoke(app, ["assets", "attach", "--dag", "ingest", "--task", "load", "--asset", "orders",
                                "--role", "outlet"])
    assert attached.exit_code == 0 and "now an outlet" in attached.output
    assert "orders" in cli.invoke(app, ["assets", "attachments"]).output
    bad_role = cli.invoke(app, ["assets", "attach", "--dag", "d", "--task", "t", "--asset", "orders",
                                "--role", "writer"])
    assert bad_role.exit_code == 1
    assert cli.invoke(app, ["state", "set", "--asset", "orders", "watermark", "--text", "2026-10-01"]).exit_code == 0
    assert cli.invoke(app, ["state", "get", "--asset", "orders", "watermark"]).output.strip() == '"2026-10-01"'
    assert cli.invoke(app, ["state", "get", "--asset", "nope", "watermark"]).exit_code == 1
    both = cli.invoke(app, ["state", "get", "--asset", "orders", "--dag", "ingest", "k"])
    assert both.exit_code == 1 and "not both" in both.output
    detached = cli.invoke(app, ["assets", "detach", "--dag", "ingest", "--task", "load", "--asset", "orders"])
    assert "removed 1" in detached.output


def test_values_are_json_and_refused_as_the_api_refuses_them(cli: CliRunner) -> None:
    assert cli.invoke(app, ["state", "set", *TASK, "checkpoint", '{"batch": 41, "files": ["a"]}']).exit_code == 0
    got = cli.invoke(app, ["state", "get", *TASK, "checkpoint"])
    assert got.exit_code == 0 and got.output.strip() == '{"batch": 41, "files": ["a"]}'
    not_json = cli.invoke(app, ["state", "set", *TASK, "checkpoint", "batch 41"])
    assert not_json.exit_code == 1 and "--text" in not_json.output
    for refused in ("null", "NaN", '{"x": Infinity}'):
        result = cli.invoke(app, ["state", "set", *TASK, "checkpoint", refused])
        assert result.exit_code == 1, refused
    assert cli.invoke(app, ["state", "get", *TASK, "checkpoint"]).output.strip() == '{"batch": 41, "files": ["a"]}'


def test_cleanup_deletes_only_expired_task_state(cli: CliRunner) -> None:
    cli.invoke(app, ["state", "set", *TASK, "old", "1", "--expires-at", "2020-01-01T00:00:00Z"])
    cli.invoke(app, ["state", "set", *TASK, "later", "2", "--expires-at", "2999-01-01T00:00:00+00:00"])
    cli.invoke(app, ["state", "set", *TASK, "forever", "3"])
    naive = cli.invoke(app, ["state", "set", *TASK, "x", "1", "--expires-at", "2020-01-01T00:00:00"])
    assert naive.exit_code == 1 and "time zone" in naive.output
    dry = cli.invoke(app, ["state", "cleanup", "--dry-run"])
    assert dry.exit_code == 0 and "ingest/run-1/load[-1] old" in dry.output and "1 expired" in dry.output
    assert cli.invoke(app, ["state", "get", *TASK, "old"]).exit_code == 0
    cleaned = cli.invoke(app, ["state", "cleanup", "--batch-size", "1"])
    assert cleaned.exit_code == 0 and "deleted 1 expired" in cleaned.output
    assert cli.invoke(app, ["state", "get", *TASK, "old"]).exit_code == 1
    for kept in ("later", "forever"):
        assert cli.invoke(app, ["state", "get", *TASK, kept]).exit_code == 0
