"""Entry point of the `assetbus` console script: one typer app, one sub-app per area."""

from __future__ import annotations

import typer

from assetbus.cli import assets, bench, database, demo, infra, services, tokens

app = typer.Typer(help="assetbus: durable, exactly-once asset-readiness events over Kafka and PostgreSQL.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(infra.app, name="infra")
app.add_typer(services.app, name="run")
app.add_typer(assets.app, name="assets")
app.add_typer(tokens.app, name="token")
app.add_typer(bench.app, name="bench")
database.register(app)
app.command("demo")(demo.demo)


def main() -> None:
    app()
