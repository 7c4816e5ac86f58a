"""Entry point of the `assetbus` console script: one typer app, one sub-app per area.

Every module imported here is cheap (typer and rich only): the heavy libraries are imported by the
command that needs them, so `assetbus --help` answers quickly.
"""

from __future__ import annotations

import signal
import sys

import typer

from assetbus.cli import (
    airflow,
    assets,
    bench,
    contract,
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
    tokens,
    topics,
)
from assetbus.cli import state as state_cli
from assetbus.cli.lazy import lazy_typer
from assetbus.cli.versions import version_callback

app = typer.Typer(help="assetbus: durable, exactly-once asset-readiness events over Kafka and PostgreSQL.",
                  no_args_is_help=True, pretty_exceptions_enable=False,
                  # every option can also be set as ASSETBUS_<COMMAND>_<SUBCOMMAND>_<OPTION> (the services'
                  # options carry their settings' own names, e.g. ASSETBUS_PERSISTER_MAX_RECORDS)
                  context_settings={"auto_envvar_prefix": "ASSETBUS"})


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                      allow_from_autoenv=False,  # ASSETBUS_VERSION is no switch
                                      help="Print the installed assetbus distributions' versions and exit.")) -> None:
    # Here rather than in main(): this runs before any sub-command parses its options, but not for
    # `--help` or `--version`, which then need neither python-dotenv nor the settings models.
    from dotenv import load_dotenv

    from assetbus.consumers.settings import ENV_FILE
    from assetbus.producers.secret_files import SecretFileError, expand_file_variables

    load_dotenv(ENV_FILE, override=False)  # the environment wins over .env, as in the settings models
    try:
        expand_file_variables()  # NAME_FILE=/path stands for NAME (secrets mounted as files)
    except SecretFileError as error:
        raise typer.BadParameter(str(error)) from None


app.add_typer(infra.app, name="infra")
app.add_typer(lazy_typer("assetbus.cli.services", help="Run a service in the foreground."), name="run")
app.add_typer(assets.app, name="assets")
app.add_typer(state_cli.app, name="state")
app.add_typer(tokens.app, name="token")
app.add_typer(bench.app, name="bench")
app.add_typer(dags.app, name="dags")
app.add_typer(runs.app, name="runs")
app.add_typer(airflow.app, name="airflow")
app.command("replay")(replay.replay_command)
app.command("migrate")(database.migrate)
app.command("demo")(demo.demo)
app.add_typer(events.app, name="events")
app.add_typer(dlq.app, name="dlq")
app.command("lag")(lag.lag)
app.command("doctor")(doctor.doctor)
app.add_typer(contract.app, name="contract")
app.add_typer(topics.app, name="topics")


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        stop_cleanly_until_served()
    app()


def stop_cleanly_until_served() -> None:
    """`assetbus run <service>`: a SIGTERM that comes before the service's event loop takes the signal over
    (`Service.serve_until_signalled`), while the service's modules load and its loop starts, ends the process
    with exit code 0, as one that comes later does; without this, the default action killed it (-15)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
