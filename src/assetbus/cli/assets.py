"""`assetbus assets register|list|attach|detach|attachments`: the registry emitters are checked against, and
which tasks are inlets or outlets of which assets.

A task may read and write an asset's state only while it is attached to the asset.
"""

from __future__ import annotations

import typer

from assetbus.cli.common import JSON_OPTION, console, on_database
from assetbus.cli.output import print_rows

app = typer.Typer(help="Register and list assets.", no_args_is_help=True)

DAG = typer.Option(..., "--dag", help="DAG id.")
TASK = typer.Option(..., "--task", help="Task id.")
ASSET = typer.Option(..., "--asset", help="Registered asset name.")


@app.command("register")
def register(name: str, uri: str) -> None:
    """Register an asset by name and URI (emissions must name both). Idempotent."""
    from assetbus.consumers.storage import register_asset

    row = on_database(lambda conn: register_asset(conn, name, uri), transaction=True, refused=(ValueError,))
    console.print(f"asset {row.name} ({row.uri}) registered, id {row.id}")


@app.command("list")
def list_(as_json: bool = JSON_OPTION) -> None:
    """List registered assets."""
    from assetbus.consumers.storage import list_assets

    print_rows(on_database(list_assets), as_json, ("id", "name", "uri", "active"),
               lambda row: (str(row.id), row.name, row.uri, "yes" if row.active else "no"))


@app.command("attach")
def attach(dag: str = DAG, task: str = TASK, asset: str = ASSET,
           role: str = typer.Option(..., "--role", help="inlet (reads the asset) or outlet (writes it).")) -> None:
    """Register a task as an inlet or outlet of an asset (idempotent)."""
    from assetbus.consumers.storage.task_assets import attach_task_asset

    new = on_database(lambda conn: attach_task_asset(conn, dag, task, asset, role), transaction=True,
                      refused=(ValueError,))
    console.print(f"task {dag}.{task} is {'now' if new else 'already'} an {role} of asset {asset}")


@app.command("detach")
def detach(dag: str = DAG, task: str = TASK, asset: str = ASSET,
           role: str | None = typer.Option(None, "--role", help="inlet or outlet; omit for both.")) -> None:
    """Remove a task's registration with an asset."""
    from assetbus.consumers.storage.task_assets import detach_task_asset

    removed = on_database(lambda conn: detach_task_asset(conn, dag, task, asset, role), transaction=True,
                          refused=(ValueError,))
    console.print(f"removed {removed} registration(s) of task {dag}.{task} with asset {asset}")


@app.command("attachments")
def attachments(dag: str | None = typer.Option(None, "--dag", help="Only this DAG's tasks."),
                as_json: bool = JSON_OPTION) -> None:
    """List task-asset registrations."""
    from assetbus.consumers.storage.task_assets import list_task_assets

    rows = on_database(lambda conn: list_task_assets(conn, dag))
    print_rows(rows, as_json, ("dag", "task", "asset", "role", "since"),
               lambda row: (row.dag_id, row.task_id, row.asset_name, row.role,
                            row.created_at.isoformat(timespec="seconds")))
