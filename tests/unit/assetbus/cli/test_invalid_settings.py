"""An invalid Kafka setting stops any command with one line naming it (exit code 2), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app


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
