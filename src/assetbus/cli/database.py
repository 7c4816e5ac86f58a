"""`assetbus migrate`: topics and database schema, both idempotent."""

from __future__ import annotations

import typer

from assetbus.cli.common import console, fail, run, settings
from assetbus.cli.failures import ExitCode


def migrate(
    accept_weaker_topics: bool = typer.Option(False, help="Exit 0 even if existing topics have fewer partitions or "
                                              "replicas, or a lower min.insync.replicas, than configured."),
) -> None:
    """Create the missing Kafka topics and apply the Alembic migrations (safe to run again)."""
    from sqlalchemy.exc import SQLAlchemyError

    from assetbus.migrate import upgrade
    from assetbus.producers.kafka.topics import TopicCreationFailed
    from assetbus.schemas import Topics
    from assetbus.topics import ensure_topics

    s = settings()
    kafka, wanted = s.kafka, s.topic_settings
    try:
        report = run(ensure_topics(kafka, Topics(prefix=s.topic_prefix), partitions=wanted.partitions,
                                   replication_factor=wanted.replication_factor,
                                   min_insync_replicas=wanted.min_insync_replicas, create=s.create_topics),
                     refused=(TopicCreationFailed,))
    except typer.Exit:  # run() said it in one line (a refused creation, a topic missing with no topic creation)
        raise
    except Exception as error:  # aiokafka raises several unrelated types for "cannot connect"
        fail(f"cannot reach Kafka at {kafka.describe()} ({type(error).__name__}); "
             "run `assetbus infra up` or set KAFKA_BOOTSTRAP_SERVERS", ExitCode.KAFKA_UNREACHABLE)
    created = report.created
    console.print(f"topics: created {len(created)}" + (f" ({', '.join(created)})" if created else " (all present)")
                  + f", replication factor {report.replication_factor}, min.insync.replicas "
                  f"{report.min_insync_replicas}")
    for weaker in report.weaker:
        console.print(f"[yellow]weaker topic:[/] {weaker}")
    try:
        upgrade(s.database_url)
    except (SQLAlchemyError, OSError) as error:
        fail(f"cannot migrate the database ({type(error).__name__}: {error}); "
             "run `assetbus infra up` or check DATABASE_URL", ExitCode.DATABASE_UNREACHABLE)
    console.print("database: at head")
    if report.weaker and not accept_weaker_topics:
        fail(f"{len(report.weaker)} existing topic setting(s) weaker than configured (listed above); fix them on the "
             "cluster or pass --accept-weaker-topics", code=ExitCode.WEAKER_TOPICS)
