"""An unreachable database or broker ends a command in one line and a documented exit code, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from assetbus.cli.failures import ExitCode

NOWHERE = {"DATABASE_URL": "postgresql://assetbus:assetbus@127.0.0.1:1/assetbus",
           "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}


def _assetbus(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from assetbus.cli.main import main; main()", *args],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("args", "code", "names"), [
    (("assets", "list"), ExitCode.DATABASE_UNREACHABLE, "DATABASE_URL"),
    (("runs", "list", "--json"), ExitCode.DATABASE_UNREACHABLE, "DATABASE_URL"),
    (("events", "list"), ExitCode.DATABASE_UNREACHABLE, "DATABASE_URL"),
    (("lag",), ExitCode.KAFKA_UNREACHABLE, "KAFKA_BOOTSTRAP_SERVERS"),
    (("dlq", "list"), ExitCode.KAFKA_UNREACHABLE, "KAFKA_BOOTSTRAP_SERVERS"),
])
def test_unreachable_service_is_one_line_and_its_exit_code(args: tuple[str, ...], code: ExitCode, names: str) -> None:
    done = _assetbus(*args, **NOWHERE)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and names in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_an_unmigrated_database_says_run_migrate(empty_db_url: str) -> None:
    done = _assetbus("assets", "list", DATABASE_URL=empty_db_url)
    assert done.returncode == ExitCode.NOT_MIGRATED and "assetbus migrate" in done.stderr, done.stderr


def test_doctor_with_nothing_reachable_fails_and_names_fixes() -> None:
    done = _assetbus("doctor", "--json", **NOWHERE)
    assert done.returncode == ExitCode.FAILED and "Traceback" not in done.stderr
    assert "infra up" in done.stdout
