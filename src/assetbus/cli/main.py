"""Entry point of the `assetbus` console script: one typer app, one sub-app per area.

Every module imported here is cheap (typer and rich only): the heavy libraries are imported by the
command that needs them, so `assetbus --help` answers quickly.
"""

from __future__ import annotations

import typer

from assetbus.cli import (
    assets,
    bench,
    dags,
    database,
    demo,
    dlq,
    doctor,
    events,
    infra,
    lag,
    replay,
    runs,
    services,
    tokens,
)
from assetbus.cli import registrations as registrations_cli
from assetbus.cli import state as state_cli
from assetbus.cli.versions import version_callback

app = typer.Typer(help="assetbus: durable, exactly-once asset-readiness events over Kafka and PostgreSQL.",
                  no_args_is_help=True, pretty_exceptions_enable=False)


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                      help="Print the installed assetbus distributions' versions and exit.")) -> None:
    """assetbus: durable, exactly-once asset-readiness events over Kafka and PostgreSQL."""


app.add_typer(infra.app, name="infra")
app.add_typer(services.app, name="run")
app.add_typer(assets.app, name="assets")
registrations_cli.register(assets.app)
app.add_typer(state_cli.app, name="state")
app.add_typer(tokens.app, name="token")
app.add_typer(bench.app, name="bench")
app.add_typer(dags.app, name="dags")
app.add_typer(runs.app, name="runs")
app.command("replay")(replay.replay_command)
database.register(app)
app.command("demo")(demo.demo)
app.add_typer(events.app, name="events")
app.add_typer(dlq.app, name="dlq")
app.command("lag")(lag.lag)
app.command("doctor")(doctor.doctor)


def main() -> None:
    app()
