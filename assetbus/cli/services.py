"""`assetbus run ...`: the long-running services, stopped cleanly by SIGINT/SIGTERM."""

from __future__ import annotations

import typer

from assetbus.cli.common import run, settings, setup_logging
from consumers.persister import PersisterConfig, create_app
from schemas import Topics

app = typer.Typer(help="Run a service in the foreground.", no_args_is_help=True)


@app.command("persister")
def persister(
    max_records: int = typer.Option(2000, help="Largest batch taken from Kafka and written in one transaction."),
    batch_timeout_ms: int = typer.Option(50, help="How long to wait to fill a batch."),
    group_id: str = typer.Option("assetbus-persister", help="Consumer group shared by persister processes."),
    log_level: str = typer.Option("INFO", help="Logging level."),
) -> None:
    """Consume emissions, store each event once, publish receipts and asset events."""
    setup_logging(log_level)
    s = settings()
    config = PersisterConfig(bootstrap_servers=s.bootstrap_servers, database_url=s.database_url,
                             token_secret=s.token_secret, topics=Topics(prefix=s.topic_prefix),
                             group_id=group_id, max_records=max_records, batch_timeout_ms=batch_timeout_ms)
    run(create_app(config).run())
