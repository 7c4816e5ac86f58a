"""`assetbus lag`: how far behind each consumer group is, per topic partition (read-only)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from assetbus.cli.common import JSON_OPTION, console, kafka_connection, run, settings
from assetbus.cli.output import print_json


def lag(groups: Annotated[list[str] | None, typer.Option("--group", help="Only this consumer group (repeatable).")]
        = None, as_json: bool = JSON_OPTION) -> None:
    """Consumer-group lag on the prefix's topics: records written but not yet committed by each group."""
    from rich.table import Table

    from assetbus.consumers.observe import consumer_group_lag

    prefix = settings().topic_prefix
    found = run(consumer_group_lag(kafka_connection(), topic_prefix=prefix, groups=groups or None))
    rows: list[dict[str, Any]] = [{"group": g.group_id, "topic": p.topic, "partition": p.partition,
                                   "committed": p.committed, "end": p.end, "lag": p.lag}
                                  for g in found for p in g.partitions]
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(f"no consumer group has committed offsets on {prefix}.* topics")
        return
    table = Table("group", "topic", "partition", "committed", "end", "lag", title=f"consumer lag on {prefix}.* topics",
                  title_justify="left")
    for row in rows:
        style = "green" if row["lag"] == 0 else "yellow"
        table.add_row(row["group"], row["topic"], str(row["partition"]), str(row["committed"]), str(row["end"]),
                      f"[{style}]{row['lag']}[/]")
    console.print(table)
    for group in found:
        console.print(f"{group.group_id}: {group.lag} record(s) behind", highlight=False)
