"""`assetbus lag`: how far behind each consumer group is, per topic partition (read-only)."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

import typer

from assetbus.cli.common import JSON_OPTION, console, kafka_connection, run, settings
from assetbus.cli.output import print_json


def lag(groups: Annotated[list[str] | None, typer.Option("--group", help="Only this consumer group (repeatable).")]
        = None,
        every_topic: bool = typer.Option(False, "--every-topic", help="Also topics outside ASSETBUS_TOPIC_PREFIX."),
        as_json: bool = JSON_OPTION) -> None:
    """Consumer-group lag on the pipeline's topics: records written but not yet committed by each group."""
    from rich.table import Table

    from assetbus.consumers.observe import consumer_lag

    prefix = None if every_topic else settings().topic_prefix
    rows = run(consumer_lag(kafka_connection(), topic_prefix=prefix, groups=groups or None))
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no consumer group has committed offsets on these topics")
        return
    totals: dict[str, int] = defaultdict(int)
    table = Table("group", "topic", "partition", "committed", "end", "lag",
                  title=f"consumer lag on {prefix}.* topics" if prefix else "consumer lag", title_justify="left")
    for row in rows:
        totals[row.group] += row.lag
        style = "green" if row.lag == 0 else "yellow"
        table.add_row(row.group, row.topic, str(row.partition), "-" if row.committed is None else str(row.committed),
                      str(row.end), f"[{style}]{row.lag}[/]")
    console.print(table)
    for group, total in totals.items():
        console.print(f"{group}: {total} record(s) behind", highlight=False)
