"""Helpers shared by the CLI commands: settings, one-line errors, the console."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from assetbus.settings import Settings

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    return Settings()


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one red sentence and exit: no stack traces for users."""
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
