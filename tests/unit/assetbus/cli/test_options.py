"""Service options come from the settings models: command line over environment over `.env` over default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from assetbus.cli.options import LogSettings, build, settings_options
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.producers.kafka import KafkaConnection

CONNECTION = {"kafka": KafkaConnection(bootstrap_servers=("127.0.0.1:1",)), "database_url": "postgresql+asyncpg://u@h/db",
              "token_secret": "k"}


def _built(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, list[Any]]:
    seen: list[Any] = []
    app = typer.Typer()

    @app.command()
    @settings_options(PersisterConfig, LogSettings)
    def persister(options: dict[str, Any]) -> None:
        seen.append((build(PersisterConfig, options, **CONNECTION), build(LogSettings, options)))

    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.output, seen


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    for name in ("ASSETBUS_PERSISTER_MAX_RECORDS", "ASSETBUS_PERSISTER_CHUNK_SIZE", "ASSETBUS_LOG_FORMAT"):
        monkeypatch.delenv(name, raising=False)


def test_an_option_left_out_keeps_the_models_default() -> None:
    code, _, seen = _built([])
    assert code == 0
    config, log = seen[0]
    assert config.max_records == PersisterConfig.model_fields["max_records"].default
    assert log.log_format == "kv"


def test_the_environment_sets_an_option_under_the_models_own_name() -> None:
    code, _, seen = _built([], env={"ASSETBUS_PERSISTER_MAX_RECORDS": "123", "ASSETBUS_LOG_FORMAT": "json"})
    assert code == 0
    assert seen[0][0].max_records == 123
    assert seen[0][1].log_format == "json"


def test_the_command_line_wins_over_the_environment() -> None:
    code, _, seen = _built(["--max-records", "7"], env={"ASSETBUS_PERSISTER_MAX_RECORDS": "123"})
    assert code == 0
    assert seen[0][0].max_records == 7


def test_a_dotenv_file_sets_what_the_environment_does_not(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ASSETBUS_PERSISTER_CHUNK_SIZE=250\nASSETBUS_PERSISTER_MAX_RECORDS=999\n")
    code, _, seen = _built([], env={"ASSETBUS_PERSISTER_MAX_RECORDS": "500"})
    assert code == 0
    assert (seen[0][0].chunk_size, seen[0][0].max_records) == (250, 500)


def test_an_invalid_value_exits_2_with_one_line_naming_the_setting() -> None:
    code, output, seen = _built(["--chunk-size", "0"])
    assert code == 2
    assert seen == []
    assert "chunk_size" in output and "ASSETBUS_PERSISTER_CHUNK_SIZE" in output
    assert "Traceback" not in output


def test_inconsistent_values_are_refused_by_the_model() -> None:
    code, output, _ = _built(["--backoff-initial-s", "3", "--backoff-max-s", "1"])
    assert code == 2
    assert "backoff_max_s must not be below backoff_initial_s" in output


def test_help_shows_each_fields_description_default_and_variable() -> None:
    app = typer.Typer()

    @app.command()
    @settings_options(PersisterConfig)
    def persister(options: dict[str, Any]) -> None:
        raise AssertionError("not run")

    output = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--max-records" in output and "ASSETBUS_PERSISTER_MAX_RECORDS" in output
    assert "(default: 4000)" in output
    assert "--database-url" not in output  # connection values come from the shared settings
