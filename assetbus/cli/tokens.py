"""`assetbus token issue`: mint an emitter token for a task attempt or a DAG run."""

from __future__ import annotations

import typer

from assetbus.cli.common import settings
from producers.tokens import dag_token, task_token

app = typer.Typer(help="Emitter tokens.", no_args_is_help=True)


@app.command("issue")
def issue(
    dag: str = typer.Option(..., "--dag", help="DAG id."),
    run_id: str = typer.Option(..., "--run", help="DAG run id."),
    task: str | None = typer.Option(None, "--task", help="Task id; omit for a DAG-level (callback) token."),
    map_index: int = typer.Option(-1, "--map-index", help="Map index of the task (-1: unmapped)."),
    try_number: int = typer.Option(1, "--try", help="Try number of the task attempt."),
    ttl: int = typer.Option(24 * 3600, "--ttl", help="Lifetime in seconds."),
) -> None:
    """Print a signed token (signed with ASSETBUS_TOKEN_SECRET, or the local generated key)."""
    secret = settings().token_secret
    if task is None:
        typer.echo(dag_token(secret, dag, run_id, ttl_seconds=ttl))
    else:
        typer.echo(task_token(secret, dag, run_id, task, map_index=map_index, try_number=try_number,
                              ttl_seconds=ttl))
