"""`assetbus lag`: how far behind each consumer group is, per topic partition (read-only)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from assetbus.cli.common import JSON_OPTION, console, kafka_connection, run, settings
from assetbus.cli.output import print_rows


def lag(groups: Annotated[list[str] | None, typer.Option("--group", help="Only this consumer group (repeatable).")]
        = None, as_json: bool = JSON_OPTION) -> None:
    """Consumer-group lag on the prefix's topics: records written but not yet committed by each group."""
    from assetbus.consumers.observe import consumer_group_lag

    prefix = settings().topic_prefix
    found = run(consumer_group_lag(kafka_connection(), topic_prefix=prefix, groups=groups or None))
    rows: list[dict[str, Any]] = [{"group": g.group_id, "topic": p.topic, "partition": p.partition,
                                   "committed": p.committed, "end": p.end, "lag": p.lag}
                                  for g in found for p in g.partitions]
    if not rows and not as_json:
        console.print(f"no consumer group has committed offsets on {prefix}.* topics")
        return
    print_rows(rows, as_json, ("group", "topic", "partition", "committed", "end", "lag"),
               lambda row: (row["group"], row["topic"], str(row["partition"]), str(row["committed"]), str(row["end"]),
                            f"[{'green' if row['lag'] == 0 else 'yellow'}]{row['lag']}[/]"),
               title=f"consumer lag on {prefix}.* topics")
    if not as_json:
        for group in found:
            console.print(f"{group.group_id}: {group.lag} record(s) behind", highlight=False)
