"""What operators look at: probes and readiness checks, logs, consumer-group lag and dead letters. Shared by every
service, the `/ui` page and the CLI, so it imports no service (what a DAG's partitions wait for needs the
scheduler's planner: `assetbus.consumers.api.ui.waiting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.observe.deadletters import DeadLetterRecord, read_dead_letter, read_dead_letters
    from assetbus.consumers.observe.lag import consumer_group_lag, describe_cluster
    from assetbus.consumers.observe.probes import ProbeServer
    from assetbus.consumers.observe.readiness import ReadinessChecks
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    "DeadLetterRecord",
    "ProbeServer",
    "ReadinessChecks",
    "consumer_group_lag",
    "describe_cluster",
    "read_dead_letter",
    "read_dead_letters",
]
