"""`assetbus assets register|list`: the registry emitters are checked against."""

from __future__ import annotations

import typer

from assetbus.cli.common import JSON_OPTION, connect, console, fail, run
from assetbus.cli.output import print_json

app = typer.Typer(help="Register and list assets.", no_args_is_help=True)


@app.command("register")
def register(name: str, uri: str) -> None:
    """Register an asset by name and URI (emissions must name both). Idempotent."""
    from assetbus.consumers.storage import register_asset

    async def go() -> None:
        async with connect(transaction=True) as conn:
            row = await register_asset(conn, name, uri)
        console.print(f"asset {row.name} ({row.uri}) registered, id {row.id}")

    try:
        run(go())
    except ValueError as error:
        fail(str(error))


@app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """List registered assets."""
    from rich.table import Table

    from assetbus.consumers.storage import AssetRow, list_assets

    async def go() -> list[AssetRow]:
        async with connect() as conn:
            return await list_assets(conn)

    rows = run(go())
    if as_json:
        print_json(rows)
        return
    table = Table("id", "name", "uri", "active")
    for row in rows:
        table.add_row(str(row.id), row.name, row.uri, "yes" if row.active else "no")
    console.print(table)
