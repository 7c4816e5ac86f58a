"""An invalid Kafka setting stops any command with one line naming it (exit code 2), never a traceback; so does a
setting that cannot work (a compression codec that is not installed, an empty DATABASE_URL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app
from assetbus.infra.ports import free_port


@pytest.mark.parametrize(("variable", "value", "line"), [
    ("KAFKA_PROPERTIES", "client.rak=eu-west-1a",
     "error: invalid KAFKA_* settings: unknown Kafka client property 'client.rak'; assetbus passes through: "),
    ("KAFKA_SSL_CHECK_HOSTNAME", "maybe", "error: invalid setting KAFKA_SSL_CHECK_HOSTNAME: Input should be a valid "
     "boolean"),
])
def test_an_invalid_kafka_setting_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        variable: str, value: str, line: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(app, ["topics", "plan"])
    assert result.exit_code == 2
    (printed,) = result.output.strip().splitlines()
    assert printed.startswith(line), printed


@pytest.mark.parametrize(("variable", "value", "line"), [
    ("KAFKA_PROPERTIES", "compression.type=zstd", "error: invalid KAFKA_* settings: Kafka client property "
     "'compression.type' is zstd, whose codec is not installed: pip install cramjam (aiokafka's zstd extra), or "
     "choose gzip or none"),
    ("DATABASE_URL", "", "error: invalid setting DATABASE_URL: DATABASE_URL is set but empty; give a value, or "
     "unset DATABASE_URL to use the local infrastructure of `assetbus infra up`"),
])
def test_a_persister_given_a_setting_that_cannot_work_exits_at_start_with_one_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, value: str, line: str) -> None:
    from aiokafka import codec

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(codec, "has_zstd", lambda: False)  # as where cramjam is not installed
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{free_port()}")  # were it to start: nothing there
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", "a-secret-long-enough-for-hs256-signing-keys")
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("COLUMNS", "400")
    result = CliRunner().invoke(app, ["run", "persister", "--startup-timeout-s", "1"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [line]
    assert isinstance(result.exception, SystemExit)  # no traceback: the command ended on purpose
