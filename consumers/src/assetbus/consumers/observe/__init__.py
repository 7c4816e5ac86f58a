"""What operators look at: probes and readiness checks, logs, consumer-group lag and dead letters.

Shared by every service (`/metrics`, `/healthz`, `/readyz`, JSON logs), the `/ui` page and the CLI, so
it imports no service: what a DAG's partitions wait for needs the scheduler's planner and lives with
the page that shows it (`assetbus.consumers.api.ui.waiting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.observe.buckets import LATENCY_BUCKETS, READINESS_BUCKETS
    from assetbus.consumers.observe.deadletters import DeadLetterRecord, read_dead_letter, read_dead_letters
    from assetbus.consumers.observe.lag import GroupLag, PartitionLag, consumer_group_lag, end_offsets, partitions_of
    from assetbus.consumers.observe.logs import JsonFormatter, KeyValueFormatter, configure
    from assetbus.consumers.observe.probes import ProbeServer, start_probes
    from assetbus.consumers.observe.readiness import CheckResult, ReadinessChecks, ReadinessReport
    from assetbus.consumers.observe.topics import ClusterInfo, TopicInfo, describe_cluster
    from assetbus.migrations.heads import migration_heads
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__, {
        ".buckets": ("LATENCY_BUCKETS", "READINESS_BUCKETS"),
        ".deadletters": ("DeadLetterRecord", "read_dead_letter", "read_dead_letters"),
        ".lag": ("GroupLag", "PartitionLag", "consumer_group_lag", "end_offsets", "partitions_of"),
        ".logs": ("JsonFormatter", "KeyValueFormatter", "configure"),
        ".probes": ("ProbeServer", "start_probes"),
        ".readiness": ("CheckResult", "ReadinessChecks", "ReadinessReport"),
        ".topics": ("ClusterInfo", "TopicInfo", "describe_cluster"),
        "assetbus.migrations.heads": ("migration_heads",),
    })

__all__ = [
    "LATENCY_BUCKETS",
    "READINESS_BUCKETS",
    "CheckResult",
    "ClusterInfo",
    "DeadLetterRecord",
    "GroupLag",
    "JsonFormatter",
    "KeyValueFormatter",
    "PartitionLag",
    "ProbeServer",
    "ReadinessChecks",
    "ReadinessReport",
    "TopicInfo",
    "configure",
    "consumer_group_lag",
    "describe_cluster",
    "end_offsets",
    "migration_heads",
    "partitions_of",
    "read_dead_letter",
    "read_dead_letters",
    "start_probes",
]
