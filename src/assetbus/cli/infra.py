"""`assetbus infra up | down | status`: the local Kafka broker and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from assetbus.cli.common import CONSOLE_WIDTH as common_width
from assetbus.infra import InfraError, InfraStatus, ServiceStatus
from assetbus.infra import down as infra_down
from assetbus.infra import status as infra_status
from assetbus.infra import up as infra_up
from assetbus.security_settings import ensure_local_secret
from assetbus.settings import ConnectionSettings, InfraSettings

app = typer.Typer(
    help="Local infrastructure: a real Kafka broker (KRaft) and PostgreSQL, no Docker.", no_args_is_help=True
)
S = TypeVar("S", InfraSettings, ConnectionSettings)
console = Console(width=common_width)
errors = Console(stderr=True, width=common_width)


def _progress(message: str) -> None:
    console.print(f"[dim]…[/dim] {message.rstrip('…')}")


def _table(result: InfraStatus) -> Table:
    table = Table(title="assetbus infrastructure", title_justify="left")
    for column in ("service", "mode", "state", "address", "pid"):
        table.add_column(column, no_wrap=True)
    table.add_column("log / detail", overflow="fold")
    for svc in (result.kafka, result.postgres):
        state = "[green]running[/]" if svc.running else "[red]stopped[/]"
        table.add_row(svc.name, _mode(svc), state, svc.address, str(svc.pid or "-"), _where(svc))
    return table


def _mode(svc: ServiceStatus) -> str:
    if not svc.managed:
        return "external"
    return "local (ours)" if svc.started_by_us else "local"


def _where(svc: ServiceStatus) -> str:
    parts = [str(svc.log_file)] if svc.log_file else []
    return "\n".join([*parts, svc.detail] if svc.detail else parts) or "-"


def _run(action: Callable[[InfraSettings, ConnectionSettings], InfraStatus]) -> InfraStatus:
    try:
        return action(_settings(InfraSettings, "ASSETBUS_"), _settings(ConnectionSettings, ""))
    except InfraError as exc:
        errors.print(f"[red]{exc}[/red]", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


def _settings(kind: type[S], env_prefix: str) -> S:
    try:
        return kind()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = env_prefix + "_".join(map(str, first["loc"])).upper()
        raise InfraError(f"Invalid {name}: {first['msg']}; fix or unset that environment variable.") from None


@app.command()
def up() -> None:
    """Start Kafka and PostgreSQL (or check the ones named by KAFKA_BOOTSTRAP_SERVERS / DATABASE_URL), and
    turn on local mode: this machine's HS256 token secret, in the launcher's home folder."""
    started = time.monotonic()
    result = _run(lambda infra, conn: infra_up(infra, conn, progress=_progress))
    ensure_local_secret(_settings(InfraSettings, "ASSETBUS_"))  # local mode: this machine's HS256 token key
    console.print(_table(result))
    console.print(f"[green]Ready[/green] in {time.monotonic() - started:.1f} s.")


@app.command()
def down() -> None:
    """Stop what `up` started; external services and clusters that already ran are left alone."""
    console.print(_table(_run(lambda infra, conn: infra_down(infra, conn, progress=_progress))))


@app.command()
def status() -> None:
    """Show whether Kafka and PostgreSQL run; exit code 1 when one of them does not."""
    result = _run(infra_status)
    console.print(_table(result))
    if not result.running:
        raise typer.Exit(code=1)
