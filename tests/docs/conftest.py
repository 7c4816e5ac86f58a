"""Fixtures of the guide runs: one warm CLI per session; per guide a fresh database, topic prefix,
token key and API port, and a working directory that looks like the repository root."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assetbus.infra.ports import free_port
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.docs.shell import Shell
from tests.docs.warm_cli import WarmCli
from tests.integration.conftest import readiness_cleanup

REPO = Path(__file__).resolve().parents[2]
LEAKY = ("ASSETBUS_", "KAFKA_", "DATABASE_URL", "VIRTUAL_ENV", "PYTHONPATH", "COLUMNS", "LINES")
"""Variables of the test process a guide must not inherit: a reader's shell starts without them (and
without a terminal size: output is piped, so tables are as wide as a CI log shows them)."""


def reader_environ() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith(LEAKY)}

__all__ = ["readiness_cleanup"]


@pytest.fixture(scope="session")
def warm_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmCli | None]:
    if os.environ.get("ASSETBUS_DOCS_COLD_CLI"):
        yield None
        return
    folder = tmp_path_factory.mktemp("warm-cli")
    with WarmCli(folder / "cli.sock", folder / "cli.log", reader_environ()) as cli:
        yield cli


@pytest.fixture
def guide_env(infra: Settings, db_url: str, topics: Topics, readiness_cleanup: None) -> dict[str, str]:
    """What the guide's shell starts with: the reader's machine, pointed at this run's own resources."""
    env = reader_environ()
    port = free_port()
    env.update({
        "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers,
        "DATABASE_URL": db_url,
        "ASSETBUS_TOPIC_PREFIX": topics.prefix,
        "ASSETBUS_TOKEN_SECRET": f"docs-{uuid.uuid4().hex}",
        "ASSETBUS_API_PORT": str(port),
        "ASSETBUS_API_URL": f"http://127.0.0.1:{port}",
        "METRICS_PORT": str(free_port()),  # guides write `${METRICS_PORT:-9464}`
        "PYTHONUNBUFFERED": "1",
    })
    return env


@pytest.fixture
def guide_cwd(tmp_path: Path) -> Path:
    """A folder whose entries link to the repository root's: files a guide writes stay out of the repo."""
    for entry in REPO.iterdir():
        if entry.name not in {".git", ".env", ".docs-test"}:  # a developer's .env would configure the guide
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


@pytest.fixture
def guide_shell(guide_cwd: Path, guide_env: dict[str, str], warm_cli: WarmCli | None) -> Iterator[Shell]:
    with Shell(guide_cwd, guide_env, prelude=warm_cli.alias() if warm_cli else "") as shell:
        yield shell
