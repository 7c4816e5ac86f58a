"""Entry point of the `assetbus` console script: one typer app, one sub-app per area."""

from __future__ import annotations

import typer

from assetbus.cli import airflow, assets, bench, dags, database, demo, infra, replay, runs, services, tokens
from assetbus.cli import registrations as registrations_cli
from assetbus.cli import state as state_cli
from assetbus.consumers.settings import ENV_FILE

app = typer.Typer(help="assetbus: durable, exactly-once asset-readiness events over Kafka and PostgreSQL.",
                  no_args_is_help=True, pretty_exceptions_enable=False,
                  # every option can also be set as ASSETBUS_<COMMAND>_<SUBCOMMAND>_<OPTION> (the services'
                  # options carry their settings' own names, e.g. ASSETBUS_PERSISTER_MAX_RECORDS)
                  context_settings={"auto_envvar_prefix": "ASSETBUS"})
app.add_typer(infra.app, name="infra")
app.add_typer(services.app, name="run")
app.add_typer(assets.app, name="assets")
registrations_cli.register(assets.app)
app.add_typer(state_cli.app, name="state")
app.add_typer(tokens.app, name="token")
app.add_typer(bench.app, name="bench")
app.add_typer(dags.app, name="dags")
app.add_typer(runs.app, name="runs")
app.add_typer(airflow.app, name="airflow")
app.command("replay")(replay.replay_command)
database.register(app)
app.command("demo")(demo.demo)


def main() -> None:
    from dotenv import load_dotenv

    load_dotenv(ENV_FILE, override=False)  # the environment wins over .env, as in the settings models
    app()
