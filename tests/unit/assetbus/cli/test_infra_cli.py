"""`assetbus infra up` options that are refused before anything starts."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from assetbus.cli.main import app


def test_secure_without_a_cluster_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["infra", "up", "--secure"], env={"ASSETBUS_HOME": str(tmp_path)})
    assert result.exit_code == 1
    assert "--secure needs a local cluster: add --brokers 3." in result.output
    assert not (tmp_path / "infra.json").exists()


def test_brokers_must_be_between_one_and_nine(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["infra", "up", "--brokers", "0"], env={"ASSETBUS_HOME": str(tmp_path)})
    assert result.exit_code == 2
    assert "--brokers" in result.output
