"""How `assetbus run api` configures uvicorn from the API settings."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from assetbus.consumers.api import ApiConfig
from assetbus.consumers.api.server import uvicorn_config
from assetbus.schemas import Topics


def _config(**values: Any) -> ApiConfig:
    return ApiConfig(kafka={"bootstrap_servers": "127.0.0.1:1"}, database_url="postgresql+asyncpg://x/y",
                     token_secret="s", topics=Topics(), **values)


def test_the_fast_loop_and_parser_by_default_and_no_access_log() -> None:
    config = uvicorn_config(None, _config(), "INFO")
    assert (config.loop, config.http, config.access_log, config.backlog) == ("uvloop", "httptools", False, 2048)
    assert config.log_level == "info"


def test_the_server_choices_are_settings() -> None:
    config = uvicorn_config(None, _config(loop="asyncio", http="h11", access_log=True, backlog=16), "WARNING")
    assert (config.loop, config.http, config.access_log, config.backlog) == ("asyncio", "h11", True, 16)


def test_workers_must_be_positive() -> None:
    assert _config(workers=2).workers == 2
    with pytest.raises(ValidationError):
        _config(workers=0)
