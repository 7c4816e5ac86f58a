"""`assetbus migrate`: topics and database schema, both idempotent."""

from __future__ import annotations

import typer

from assetbus.cli.common import console, fail, run, settings
from assetbus.cli.failures import ExitCode


def migrate() -> None:
    """Create the missing Kafka topics and apply the Alembic migrations (safe to run again)."""
    from sqlalchemy.exc import SQLAlchemyError

    from assetbus.migrate import upgrade
    from assetbus.schemas import Topics
    from assetbus.topics import ensure_topics

    s = settings()
    try:
        created = run(ensure_topics(s.bootstrap_servers, Topics(prefix=s.topic_prefix)))
    except Exception as error:  # aiokafka raises several unrelated types for "cannot connect"
        fail(f"cannot reach Kafka at {s.bootstrap_servers} ({type(error).__name__}); "
             "run `assetbus infra up` or set KAFKA_BOOTSTRAP_SERVERS", ExitCode.KAFKA_UNREACHABLE)
    console.print(f"topics: created {len(created)}" + (f" ({', '.join(created)})" if created else " (all present)"))
    try:
        upgrade(s.database_url)
    except (SQLAlchemyError, OSError) as error:
        fail(f"cannot migrate the database ({type(error).__name__}: {error}); "
             "run `assetbus infra up` or check DATABASE_URL", ExitCode.DATABASE_UNREACHABLE)
    console.print("database: at head")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
