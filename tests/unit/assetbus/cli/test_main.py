"""The root command: `--version` is a flag of the command line only, never read from the environment; `assetbus run`
catches SIGTERM from its first line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app


@pytest.mark.parametrize("value", ["0.2.0", "1", "true"])
def test_an_assetbus_version_variable_neither_breaks_nor_hijacks_a_command(value: str) -> None:
    result = CliRunner().invoke(app, ["token", "--help"], env={"ASSETBUS_VERSION": value})
    assert result.exit_code == 0, result.output
    assert "Invalid value" not in result.output
    assert "assetbus-schemas" not in result.output  # the versions listing
    assert "Usage" in result.output


def test_the_version_flag_still_prints_the_versions() -> None:
    result = CliRunner().invoke(app, ["--version"], env={"ASSETBUS_VERSION": "0.2.0"})
    assert result.exit_code == 0
    assert "assetbus-schemas" in result.output


def test_a_sigterm_before_a_service_takes_the_signal_over_is_a_clean_stop() -> None:
    """`assetbus run …` catches SIGTERM from its first line (the service's modules may still be loading): exit 0,
    where the default action killed the process (-15)."""
    code = ("import os, signal, time\n"
            "from assetbus.cli.main import stop_cleanly_until_served\n"
            "stop_cleanly_until_served()\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "time.sleep(30)\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
