"""`assetbus assets register|list`: the registry emitters are checked against."""

from __future__ import annotations

import typer
from rich.table import Table

from assetbus.cli.common import connect, console, fail, run
from assetbus.consumers.storage import list_assets, register_asset

app = typer.Typer(help="Register and list assets.", no_args_is_help=True)


@app.command("register")
def register(name: str, uri: str) -> None:
    """Register an asset by name and URI (emissions must name both). Idempotent."""

    async def go() -> None:
        async with connect(transaction=True) as conn:
            row = await register_asset(conn, name, uri)
        console.print(f"asset {row.name} ({row.uri}) registered, id {row.id}")

    try:
        run(go())
    except ValueError as error:
        fail(str(error))


@app.command("list")
def list_() -> None:
    """List registered assets."""

    async def go() -> None:
        async with connect() as conn:
            rows = await list_assets(conn)
        table = Table("id", "name", "uri", "active")
        for row in rows:
            table.add_row(str(row.id), row.name, row.uri, "yes" if row.active else "no")
        console.print(table)

    run(go())
