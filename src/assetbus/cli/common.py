"""Helpers shared by the CLI commands: settings, one-line errors, the console, a database connection.

Cheap to import, as `assetbus.cli.main` asks: SQLAlchemy and aiokafka are imported inside the functions."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from assetbus.cli.failures import ExitCode, explain

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

    from assetbus.producers.kafka import KafkaConnection
    from assetbus.producers.tokens import TokenKey
    from assetbus.settings import Settings

T = TypeVar("T")
CONSOLE_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
"""Rich wraps at 80 columns when output is piped (and COLUMNS is unset); CI logs read better wider."""
console = Console(width=CONSOLE_WIDTH)
err_console = Console(stderr=True, width=CONSOLE_WIDTH)

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document instead of a table (for scripts).")


def settings() -> Settings:
    """The settings of the environment and `.env`; an invalid one (a KAFKA_* combination, an unknown Kafka
    client property) ends in one line naming it, exit code 2."""
    from pydantic import ValidationError

    from assetbus.settings import Settings

    try:
        return Settings()
    except ValidationError as error:
        problem, kafka = error.errors()[0], error.title == "KafkaSettings"
        if problem["loc"]:
            where = "setting " + f"{'KAFKA_' if kafka else ''}{problem['loc'][0]}".upper()
        else:
            where = "KAFKA_* settings" if kafka else f"{error.title} settings"
        fail(f"invalid {where}: {str(problem['msg']).removeprefix('Value error, ')}", code=ExitCode.USAGE)


def kafka_connection() -> KafkaConnection:
    """The Kafka connection of the settings (KAFKA_*: bootstrap list, TLS, SASL), as the CLI's client."""
    return settings().kafka.for_service("cli")


def signing_key() -> TokenKey:
    """The minting key (a clear exit if none is configured)."""
    from assetbus.security_settings import SecurityConfigError

    try:
        return settings().signing_key
    except SecurityConfigError as error:
        fail(str(error))


def fail(message: str, code: int = ExitCode.FAILED) -> NoReturn:
    """Print one red sentence and exit: no stack traces for users."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@asynccontextmanager
async def database(database_url: str | None = None) -> AsyncIterator[AsyncEngine]:
    """An engine on the database (the configured one unless `database_url` is given), disposed on exit."""
    from assetbus.consumers.storage import create_engine

    engine = create_engine(settings().database_url if database_url is None else database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@asynccontextmanager
async def connect(database_url: str | None = None, *, transaction: bool = False) -> AsyncIterator[AsyncConnection]:
    """One connection on `database(database_url)`, in a transaction committed on exit when `transaction=True`."""
    async with database(database_url) as engine, engine.begin() if transaction else engine.connect() as conn:
        yield conn


def on_database(work: Callable[[AsyncConnection], Awaitable[T]], *, transaction: bool = False,
                refused: tuple[type[Exception], ...] = ()) -> T:
    """`run` `work` on one connection to the configured database (see `connect`)."""

    async def go() -> T:
        async with connect(transaction=transaction) as conn:
            return await work(conn)

    return run(go(), refused=refused)


def run(coro: Coroutine[Any, Any, T], *, loop_factory: Callable[[], AbstractEventLoop] | None = None,
        refused: tuple[type[Exception], ...] = ()) -> T:
    """Run a command's coroutine (on `loop_factory`'s loop if given); a connection or setup fault ends
    in one line and its exit code, an error of a `refused` type in its own message (exit code 1)."""
    import asyncio

    quiet = logging.getLogger("aiokafka")
    if quiet.level == logging.NOTSET:  # its connection errors are explained below, in one line
        quiet.setLevel(logging.CRITICAL)
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as error:
        code = getattr(error, "exit_code", None)
        if isinstance(code, int):  # an error that knows its exit code (a service's start-up timeout: 75)
            fail(str(error), code)
        explained = explain(error)
        if explained is not None:
            fail(explained.message, explained.code)
        if isinstance(error, refused):
            fail(str(error))
        raise

