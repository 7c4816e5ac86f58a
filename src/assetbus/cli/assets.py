"""`assetbus assets register|list`: the registry emitters are checked against."""

from __future__ import annotations

import typer

from assetbus.cli.common import JSON_OPTION, console, fail, on_database
from assetbus.cli.output import print_json

app = typer.Typer(help="Register and list assets.", no_args_is_help=True)


@app.command("register")
def register(name: str, uri: str) -> None:
    """Register an asset by name and URI (emissions must name both). Idempotent."""
    from assetbus.consumers.storage import register_asset

    try:
        row = on_database(lambda conn: register_asset(conn, name, uri), transaction=True)
    except ValueError as error:
        fail(str(error))
    console.print(f"asset {row.name} ({row.uri}) registered, id {row.id}")


@app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """List registered assets."""
    from rich.table import Table

    from assetbus.consumers.storage import list_assets

    rows = on_database(list_assets)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "name", "uri", "active")
    for row in rows:
        table.add_row(str(row.id), row.name, row.uri, "yes" if row.active else "no")
    console.print(table)
