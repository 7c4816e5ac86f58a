"""`assetbus --help` stays fast: building every sub-command imports none of the heavy libraries, and each
command imports only what it uses (`run scheduler` neither FastAPI nor the Airflow bridge)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app
from assetbus.cli.versions import installed_versions

HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "aiokafka", "alembic", "asyncpg", "faststream", "pydantic_settings",
         "assetbus.consumers", "assetbus.benchmarks", "assetbus.demo")


def test_help_imports_no_heavy_library() -> None:
    code = ("import sys; from assetbus.cli.main import app; from typer.main import get_command; get_command(app); "
            f"print(' '.join(sorted(m for m in sys.modules if m in {HEAVY!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"imported at start-up: {done.stdout}"


NOT_THE_API_OR_THE_BRIDGE = ("fastapi", "uvicorn", "starlette", "httpx", "assetbus.consumers.api.app",
                             "assetbus.consumers.airflow.bridge", "assetbus.consumers.airflow.client")
"""What a service that is neither the execution API nor the Airflow bridge never needs."""


def _loaded_by(argv: list[str], watched: tuple[str, ...]) -> list[str]:
    """The modules of `watched` loaded by running `assetbus <argv>` (as the console script does)."""
    code = ("import sys; from assetbus.cli.main import app\n"
            f"try: app({argv!r})\nexcept SystemExit as exit: assert exit.code in (0, None), exit.code\n"
            f"print(' '.join(sorted(m for m in sys.modules if m in {watched!r})), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage:" in done.stdout, done.stdout  # the command's help was printed: its options were built
    return done.stderr.split()


@pytest.mark.parametrize("argv", [["run", "scheduler", "--help"], ["run", "persister", "--help"]])
def test_a_service_command_imports_neither_the_api_nor_the_airflow_bridge(argv: list[str]) -> None:
    assert _loaded_by(argv, NOT_THE_API_OR_THE_BRIDGE) == []


@pytest.mark.parametrize("argv", [["events", "list", "--help"], ["dags", "sync", "--help"], ["state", "--help"],
                                  ["run", "--help"]])
def test_an_operator_command_s_help_imports_no_heavy_library(argv: list[str]) -> None:
    assert _loaded_by(argv, ("sqlalchemy", "aiokafka", "jwt", *NOT_THE_API_OR_THE_BRIDGE)) == []


def test_the_api_package_loads_fastapi_once_its_app_is_asked_for() -> None:
    """The checks above watch the right names: asking the API package for its app imports them."""
    code = ("import sys; from assetbus.cli import services; from assetbus.consumers.api import create_api; "
            "print('fastapi' in sys.modules, 'assetbus.consumers.api.app' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_help_lists_the_operator_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("events", "dlq", "lag", "doctor", "assets", "runs"):
        assert command in result.output


def test_version_names_each_installed_distribution() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    for name, version in installed_versions().items():
        assert f"{name} {version}" in result.output
    assert installed_versions()["assetbus"] is not None
