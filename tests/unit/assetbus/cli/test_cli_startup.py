"""`assetbus --help` stays fast: building every sub-command imports none of the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

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
