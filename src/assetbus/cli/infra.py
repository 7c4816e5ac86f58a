"""`assetbus infra up | down | status`: the local Kafka broker and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from assetbus.cli.common import JSON_OPTION, console, err_console
from assetbus.cli.output import print_json, print_rows

if TYPE_CHECKING:  # imported where used, so that `assetbus --help` stays fast
    from pydantic_settings import BaseSettings

    from assetbus.infra import InfraStatus, ServiceStatus
    from assetbus.settings import ConnectionSettings, InfraSettings

app = typer.Typer(
    help="Local infrastructure: a real Kafka broker (KRaft) and PostgreSQL, no Docker.", no_args_is_help=True
)
S = TypeVar("S", bound="BaseSettings")


def _progress(message: str) -> None:
    console.print(f"[dim]…[/dim] {message.rstrip('…')}")


def _print_table(result: InfraStatus) -> None:
    from rich.table import Column

    def cells(svc: ServiceStatus) -> tuple[str, ...]:
        state = "[green]running[/]" if svc.running else "[red]stopped[/]"
        mode = "external" if not svc.managed else "local (ours)" if svc.started_by_us else "local"
        where = "\n".join(filter(None, [str(svc.log_file or ""), svc.detail]))
        return svc.name, mode, state, svc.address, str(svc.pid or "-"), where or "-"

    columns = [Column(name, no_wrap=True) for name in ("service", "mode", "state", "address", "pid")]
    print_rows(result.services, False, [*columns, Column("log / detail", overflow="fold")], cells,
               title="assetbus infrastructure")


def _run(action: Callable[[InfraSettings, ConnectionSettings], InfraStatus]) -> InfraStatus:
    from assetbus.infra import InfraError
    from assetbus.settings import ConnectionSettings, InfraSettings

    try:
        return action(_settings(InfraSettings, "ASSETBUS_"), _settings(ConnectionSettings, ""))
    except InfraError as exc:
        err_console.print(f"[red]{exc}[/red]", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


def _settings(kind: type[S], env_prefix: str) -> S:
    from pydantic import ValidationError

    from assetbus.infra import InfraError

    try:
        return kind()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = env_prefix + "_".join(map(str, first["loc"])).upper()
        raise InfraError(f"Invalid {name}: {first['msg']}; fix or unset that environment variable.") from None


@app.command()
def up(
    brokers: int | None = typer.Option(None, "--brokers", min=1, max=9, show_default=False,
                                       help="Kafka nodes to run locally: 1, or a KRaft cluster (e.g. 3) "
                                            "[env ASSETBUS_KAFKA_BROKERS; default 1]."),
    secure: bool | None = typer.Option(None, "--secure/--no-secure", show_default=False,
                                       help="Add a SASL_SSL listener (SCRAM-SHA-512 user, self-signed CA) to the "
                                            "cluster [env ASSETBUS_KAFKA_SECURE]."),
) -> None:
    """Start Kafka and PostgreSQL (or check the ones named by KAFKA_BOOTSTRAP_SERVERS / DATABASE_URL), and
    turn on local mode: this machine's HS256 token secret, in the launcher's home folder."""
    from assetbus.infra import InfraError, secure_client_environment
    from assetbus.infra import up as infra_up
    from assetbus.security_settings import ensure_local_secret

    started = time.monotonic()
    chosen: list[InfraSettings] = []

    def start(infra: InfraSettings, conn: ConnectionSettings) -> InfraStatus:
        given = {"kafka_brokers": brokers, "kafka_secure": secure}
        chosen.append(infra.model_copy(update={k: v for k, v in given.items() if v is not None}))
        if chosen[0].kafka_secure and chosen[0].kafka_brokers < 2:
            raise InfraError("--secure needs a local cluster: add --brokers 3.")
        return infra_up(chosen[0], conn, progress=_progress)

    result = _run(start)
    ensure_local_secret(chosen[0].home)  # local mode: this machine's HS256 token key
    _print_table(result)
    console.print(f"[green]Ready[/green] in {time.monotonic() - started:.1f} s.")
    if chosen[0].kafka_secure and chosen[0].kafka_brokers > 1:
        console.print("Clients of the SASL_SSL listener need (shell syntax):")
        for name, value in secure_client_environment(chosen[0]).items():
            console.print(f"  {name}={value}", highlight=False, soft_wrap=True)


@app.command()
def down() -> None:
    """Stop what `up` started; external services and clusters that already ran are left alone."""
    from assetbus.infra import down as infra_down

    _print_table(_run(lambda infra, conn: infra_down(infra, conn, progress=_progress)))


@app.command()
def status(as_json: bool = JSON_OPTION) -> None:
    """Show whether Kafka and PostgreSQL run; exit code 1 when one of them does not."""
    from assetbus.infra import status as infra_status

    result = _run(infra_status)
    if as_json:
        print_json({"running": result.running, "services": list(result.services)})
    else:
        _print_table(result)
    if not result.running:
        raise typer.Exit(code=1)
