"""`assetbus assets attach|detach|attachments`: which tasks are inlets or outlets of which assets.

A task may read and write an asset's state only while it is attached to the asset.
"""

from __future__ import annotations

import typer

from assetbus.cli.common import JSON_OPTION, console, fail, on_database
from assetbus.cli.output import print_json

DAG = typer.Option(..., "--dag", help="DAG id.")
TASK = typer.Option(..., "--task", help="Task id.")
ASSET = typer.Option(..., "--asset", help="Registered asset name.")


def attach(dag: str = DAG, task: str = TASK, asset: str = ASSET,
           role: str = typer.Option(..., "--role", help="inlet (reads the asset) or outlet (writes it).")) -> None:
    """Register a task as an inlet or outlet of an asset (idempotent)."""
    from assetbus.consumers.storage.task_assets import attach_task_asset

    try:
        new = on_database(lambda conn: attach_task_asset(conn, dag, task, asset, role), transaction=True)
    except ValueError as error:
        fail(str(error))
    console.print(f"task {dag}.{task} is {'now' if new else 'already'} an {role} of asset {asset}")


def detach(dag: str = DAG, task: str = TASK, asset: str = ASSET,
           role: str | None = typer.Option(None, "--role", help="inlet or outlet; omit for both.")) -> None:
    """Remove a task's registration with an asset."""
    from assetbus.consumers.storage.task_assets import detach_task_asset

    try:
        removed = on_database(lambda conn: detach_task_asset(conn, dag, task, asset, role), transaction=True)
    except ValueError as error:
        fail(str(error))
    console.print(f"removed {removed} registration(s) of task {dag}.{task} with asset {asset}")


def attachments(dag: str | None = typer.Option(None, "--dag", help="Only this DAG's tasks."),
                as_json: bool = JSON_OPTION) -> None:
    """List task-asset registrations."""
    from rich.table import Table

    from assetbus.consumers.storage.task_assets import list_task_assets

    rows = on_database(lambda conn: list_task_assets(conn, dag))
    if as_json:
        print_json(rows)
        return
    table = Table("dag", "task", "asset", "role", "since")
    for row in rows:
        table.add_row(row.dag_id, row.task_id, row.asset_name, row.role, row.created_at.isoformat(timespec="seconds"))
    console.print(table)


def register(assets_app: typer.Typer) -> None:
    """Add the commands to `assetbus assets`."""
    assets_app.command("attach")(attach)
    assets_app.command("detach")(detach)
    assets_app.command("attachments")(attachments)
