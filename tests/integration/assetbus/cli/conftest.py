"""The operator commands against the test's own database, topic prefix and token key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from assetbus.cli import common
from assetbus.cli.main import app
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.conftest import fresh_database


@dataclass
class Ops:
    """`await ops(...)`: `assetbus ...` in-process, configured for this test, in a thread (each command
    runs its own event loop, and the test's loop keeps serving the persister meanwhile)."""

    runner: CliRunner

    async def __call__(self, *args: str) -> Result:
        return await asyncio.to_thread(self.runner.invoke, app, list(args))

    async def json(self, *args: str) -> Any:
        """The command's `--json` document (fails the test when the command fails)."""
        result = await self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


@pytest.fixture
def ops(infra: Settings, db_url: str, topics: Topics, token_secret: str, monkeypatch: pytest.MonkeyPatch) -> Ops:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", infra.bootstrap_servers)
    monkeypatch.setenv("ASSETBUS_TOPIC_PREFIX", topics.prefix)
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", token_secret)
    # The CLI's consoles take their width when first imported, from whatever COLUMNS the worker process had
    # then (a guide test runs commands at 80): tables the tests read are as wide as their rows.
    monkeypatch.setattr(common.console, "width", 200)
    monkeypatch.setattr(common.err_console, "width", 200)
    return Ops(CliRunner())




@pytest.fixture
async def empty_db_url(infra: Settings) -> AsyncIterator[str]:
    """A fresh database that was never migrated, dropped afterwards."""
    async for url in fresh_database(infra.database_url, None):
        yield url
