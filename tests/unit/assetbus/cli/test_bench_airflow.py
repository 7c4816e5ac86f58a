"""`assetbus bench airflow` refuses what it cannot run before starting anything, and `bench all` runs it only
where the Airflow venv can reach PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from assetbus.cli.bench_all import include_airflow
from assetbus.cli.main import app
from assetbus.infra import airflow


def bench(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["bench", "airflow", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_an_unknown_metadata_db_is_refused() -> None:
    code, output = bench("--metadata", "mysql")
    assert code != 0 and "sqlite, postgres" in output


def test_an_airflow_setting_must_name_its_section() -> None:
    code, output = bench("--airflow-setting", "parallelism=8")
    assert code != 0 and "section.key=value" in output


def test_without_the_airflow_venv_it_says_how_to_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(airflow, "AIRFLOW_VENV", tmp_path / "no-venv")
    code, output = bench("--smoke")
    assert code != 0 and "make airflow-venv" in output


def test_bench_all_runs_it_when_the_venv_reaches_postgres_and_not_in_a_smoke_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(airflow, "postgres_driver_missing", lambda venv: None)
    assert include_airflow(None, smoke=False) == (True, "")
    assert include_airflow(None, smoke=True) == (False, "")
    assert include_airflow(True, smoke=True) == (True, "")
    assert include_airflow(False, smoke=False) == (False, "")


def test_bench_all_leaves_it_out_without_the_venv_and_says_so_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(airflow, "postgres_driver_missing", lambda venv: "no Airflow venv: run `make airflow-venv`")
    included, why = include_airflow(None, smoke=False)
    assert not included and "make airflow-venv" in why
    with pytest.raises(typer.Exit):
        include_airflow(True, smoke=False)
