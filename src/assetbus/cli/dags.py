"""`assetbus dags sync PATH | list`: consumer DAG definitions from Python files into the database."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assetbus.cli.common import JSON_OPTION, connect, console, on_database, run, settings
from assetbus.cli.output import print_rows

if TYPE_CHECKING:
    from assetbus.consumers.scheduler import SyncReport
    from assetbus.producers.kafka.connection import KafkaConnection
    from assetbus.schemas import Topics

app = typer.Typer(help="Consumer DAG definitions: sync them from Python files, list them.", no_args_is_help=True)


async def sync_path(path: Path, database_url: str, kafka: KafkaConnection, topics: Topics, *,
                    allow_self_trigger: bool = False, create_topics: bool = True) -> SyncReport:
    """Load the files, write the definitions in one transaction, create the readiness topics (or, with
    `create_topics=False`, check that they exist: `TopicsNotCreated` names the missing ones)."""
    from assetbus.consumers.scheduler import create_readiness_topics, load_dag_files, sync_dags
    from assetbus.producers.kafka.topics import TopicCreator

    loaded = load_dag_files(path)
    async with connect(database_url, transaction=True) as conn:
        report = await sync_dags(conn, loaded, allow_self_trigger=allow_self_trigger)
    await create_readiness_topics(TopicCreator(kafka, create=create_topics), topics, report.synced)
    return report


@app.command("sync")
def sync(path: Annotated[Path, typer.Argument(help="A DAG file, or a folder searched for *.py files.")],
         allow_self_trigger: Annotated[bool, typer.Option(
             "--allow-self-trigger", help="Sync a DAG whose outlets feed its own schedule with a warning instead "
             "of refusing it (its own events are still skipped at run time).")] = False) -> None:
    """Create, update or deactivate consumer DAGs from PATH (idempotent; exit code 1 on any error)."""
    from rich.markup import escape
    from rich.table import Table

    from assetbus.producers.kafka.topics import TopicsNotCreated
    from assetbus.schemas import Topics

    s = settings()
    topics = Topics(prefix=s.topic_prefix)
    report = run(sync_path(path, s.database_url, s.kafka.for_service("cli"), topics,
                           allow_self_trigger=allow_self_trigger, create_topics=s.create_topics),
                 refused=(FileNotFoundError, TopicsNotCreated))
    table = Table("dag", "result", "file / reason", title=f"dags sync {path}", title_justify="left")
    for outcome in report.outcomes:
        if outcome.error is not None:
            table.add_row(outcome.dag_id, "[red]not synced[/]", escape(outcome.error))
        else:
            assert outcome.change is not None
            style = "dim" if outcome.change.value == "unchanged" else "green"
            table.add_row(outcome.dag_id, f"[{style}]{outcome.change.value}[/]", _short(outcome.fileloc))
            if outcome.warning is not None:
                table.add_row(outcome.dag_id, "[yellow]warning[/]", escape(outcome.warning))
    for dag_id in report.deactivated:
        table.add_row(dag_id, "[yellow]deactivated[/]", "no longer defined under the path")
    for fileloc, reason in report.file_errors.items():
        table.add_row("-", "[red]file error[/]", escape(f"{_short(fileloc)}: {reason}"))
    console.print(table)
    console.print(f"readiness topics: {', '.join(topics.readiness(d) for d in report.synced) or 'none'}")
    if not report.ok:
        raise typer.Exit(1)


@app.command("list")
def list_(all_: bool = typer.Option(False, "--all", help="Include deactivated DAGs."),
          as_json: bool = JSON_OPTION) -> None:
    """List consumer DAGs: what each waits for, its mappings and coalescing policy."""
    from rich.markup import escape
    from rich.table import Column

    from assetbus.consumers.scheduler import ConsumerDag
    from assetbus.consumers.storage.dags import list_dags

    def describe(definition: dict[str, Any]) -> str | None:
        return dag.describe() if (dag := ConsumerDag.readable(definition)) else None

    rows = on_database(lambda conn: list_dags(conn, active_only=not all_))
    found: list[dict[str, Any]] = [
        {"dag_id": r.dag_id, "waits_for": describe(r.definition), "coalesce": r.coalesce, "active": r.active,
         "fileloc": r.fileloc, "definition": r.definition, "created_at": r.created_at, "updated_at": r.updated_at}
        for r in rows]
    columns = [Column("dag", no_wrap=True), Column("waits for", overflow="fold"), Column("coalesce", overflow="fold"),
               Column("active", overflow="fold"),
               Column("file", no_wrap=True),  # a path stays on one line, to copy (the condition folds instead)
               Column("synced at", overflow="fold")]
    print_rows(found, as_json, columns, lambda d: (
        d["dag_id"], "[red]unreadable definition[/]" if d["waits_for"] is None else escape(d["waits_for"]),
        "yes" if d["coalesce"] else "no: a run per event", "yes" if d["active"] else "no", _short(d["fileloc"]),
        f"{d['updated_at']:%Y-%m-%d %H:%M}"), title="consumer DAGs")


def _short(fileloc: str) -> str:
    try:
        return str(Path(fileloc).relative_to(Path.cwd()))
    except ValueError:
        return fileloc
