"""`assetbus replay --dag D [--from T --to T | --partitions K,...] [--dry-run]`: re-derive missing runs."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import typer

from assetbus.cli.common import console, database, fail, run, settings
from assetbus.cli.runs import require_dag

if TYPE_CHECKING:
    from assetbus.consumers.scheduler import ConsumerDag, ReplayReport

_STYLE = {"created": "green", "would create": "cyan", "exists": "dim", "incomplete": "yellow"}


def parse_time(value: str, tz: ZoneInfo) -> datetime:
    """An ISO date (local midnight in `tz`) or date-time (naive ones are taken in `tz`)."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise typer.BadParameter(f"{value!r} is not an ISO date or date-time") from error
    return parsed if parsed.utcoffset() is not None else parsed.replace(tzinfo=tz)


def dag_zone(dag: ConsumerDag) -> str:
    """The time zone of the DAG's first roll-up mapping, else UTC."""
    for wait in dag.schedule.waits():
        tz = getattr(wait.mapping, "timezone", None)
        if isinstance(tz, str):
            return tz
    return "UTC"


def replay_command(
    dag: str = typer.Option(..., "--dag", help="Consumer DAG to replay."),
    since: str | None = typer.Option(None, "--from", help="Target partitions dated from this date/time on."),
    until: str | None = typer.Option(None, "--to", help="… up to (excluding) this date/time."),
    partitions: str | None = typer.Option(None, "--partitions", help="Comma-separated target partition keys."),
    tz: str | None = typer.Option(None, "--tz", help="Time zone of --from/--to without an offset "
                                  "(default: the DAG's roll-up time zone, else UTC)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only report what would be created; change nothing."),
    publish: bool = typer.Option(True, "--publish/--no-publish", help="Send the readiness signals now "
                                 "(otherwise a running scheduler sends them within seconds)."),
) -> None:
    """Re-derive readiness from stored events for partitions that have no run yet (existing runs are kept)."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from assetbus.consumers.scheduler import ConsumerDag, ReplayRange, replay
    from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer
    from assetbus.consumers.scheduler.topics import ReadinessTopics
    from assetbus.consumers.scheduler.tzcalendar import zone
    from assetbus.producers.kafka.producer import started
    from assetbus.producers.kafka.topics import TopicCreator
    from assetbus.schemas import Topics

    if partitions is not None and (since is not None or until is not None):
        fail("use either --from/--to or --partitions")
    s = settings()
    topics = Topics(prefix=s.topic_prefix)

    async def go() -> ReplayReport:
        async with database(s.database_url) as engine:
            async with engine.connect() as conn:
                row = await require_dag(conn, dag)
            definition = ConsumerDag.from_definition(row.definition)
            try:
                zone_info = zone(tz or dag_zone(definition))
            except ValueError as error:
                fail(str(error))
            selection = ReplayRange(
                since=parse_time(since, zone_info) if since else None,
                until=parse_time(until, zone_info) if until else None,
                partitions=frozenset(p.strip() for p in partitions.split(",") if p.strip()) if partitions else None)
            async with contextlib.AsyncExitStack() as stack:
                publisher = None
                if publish and not dry_run:
                    producer = await stack.enter_async_context(started(create_producer(s.kafka)))
                    creator = TopicCreator(s.kafka, create=s.create_topics)
                    publisher = ReadinessPublisher(producer, engine, topics, ReadinessTopics(creator, topics))
                with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), console=console, transient=False) as bar:
                    tasks = {"scan": bar.add_task("scanning stored events", total=None),
                             "create": bar.add_task("dry run: planning" if dry_run else "creating runs", total=None)}

                    def on_progress(phase: str, done: int, total: int) -> None:
                        bar.update(tasks[phase], completed=done, total=total)

                    report = await replay(engine, definition, selection, dry_run=dry_run, publisher=publisher,
                                          on_progress=on_progress)
                    for task in tasks.values():
                        bar.update(task, total=bar.tasks[task].total or 0)
            return report

    report = run(go())
    table = Table("partition", "date", "events", "result", "runs", "still missing",
                  title=f"replay {dag}{' (dry run: nothing changed)' if dry_run else ''}", title_justify="left")
    for target in sorted(report.targets, key=lambda t: (t.target_date is None,
                                                        t.target_date.timestamp() if t.target_date else 0.0,
                                                        t.target_key or "")):
        table.add_row(escape(target.target_key or "(unpartitioned)"),
                      target.target_date.isoformat() if target.target_date else "-", str(target.events),
                      f"[{_STYLE[target.action]}]{target.action}[/]", str(target.runs) if target.runs else "-",
                      ", ".join(str(p) for p in target.missing) or "-")
    console.print(table)
    if report.left_out:
        console.print(f"{report.left_out} more partition(s) not listed (at most {report.sample} per result)")
    verb = "would create" if dry_run else "created"
    console.print(f"scanned {report.scanned} stored events; {verb} {report.runs} run(s) for "
                  f"{report.count(verb)} partition(s); {report.count('exists')} already had runs; "
                  f"{report.count('incomplete')} incomplete"
                  + (f"; published {report.published} signal(s)" if report.published else ""))
