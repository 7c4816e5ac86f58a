"""Helpers shared by the CLI commands: settings, one-line errors, the console, a database connection."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage import create_engine
from assetbus.settings import Settings

T = TypeVar("T")
CONSOLE_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
"""Rich wraps at 80 columns when output is piped (and COLUMNS is unset); CI logs read better wider."""
console = Console(width=CONSOLE_WIDTH)
err_console = Console(stderr=True, width=CONSOLE_WIDTH)


def settings() -> Settings:
    return Settings()


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one red sentence and exit: no stack traces for users."""
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


@asynccontextmanager
async def connect(database_url: str | None = None, *, transaction: bool = False) -> AsyncIterator[AsyncConnection]:
    """One connection to the database (the configured one unless `database_url` is given), in a
    transaction committed on exit when `transaction=True`; its engine is disposed afterwards."""
    engine = create_engine(settings().database_url if database_url is None else database_url)
    try:
        async with engine.begin() if transaction else engine.connect() as conn:
            yield conn
    finally:
        await engine.dispose()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
