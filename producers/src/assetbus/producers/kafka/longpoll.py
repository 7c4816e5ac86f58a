"""Long polls that cost nothing at rest and never hold back a busy partition.

aiokafka keeps one fetch in flight per broker. While the records of one partition are being handled,
the fetch it sends to that partition's broker leaves the partition out, and the partition's next fetch
queues behind it: a long `fetch_max_wait_ms` there holds back the busy partition (the services keep it
at 10 ms for that reason, see docs/benchmarks.md). A fetch that leaves no partition of its broker out
holds nothing back: the broker answers it as soon as any of them has a record. Only the short wait
costs something at rest: about a hundred empty fetches a second, some 7 % of a core in the service
and as much in the broker.

`adapt_long_poll` gives each fetch the wait it can afford: `idle_wait_ms` when it names every assigned
partition of its broker, the consumer's own `fetch_max_wait_ms` when it leaves one out (records still
being handled, paused, or waiting for an offset reset). With `quiet`, only while `quiet()` holds: the
reply reader long-polls only when no receipt has been awaited for a second (one client's receipt wait
is shorter behind a 20 ms poll, see docs/benchmarks.md).

It reaches into aiokafka's fetcher (`_get_actions_per_node` and the request's `_max_wait_ms`, as read in
aiokafka 0.14). A fetcher without them is left as it is, with the short wait:
`tests/integration/producers/kafka/test_longpoll.py` fails then, not the consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer

log = logging.getLogger("assetbus.kafka")

IDLE_WAIT_MS = 500
"""Kafka's own default `fetch.max.wait.ms`: a fetch of every partition of a broker waits this long at most."""


def adapt_long_poll(consumer: AIOKafkaConsumer, idle_wait_ms: int = IDLE_WAIT_MS, *,
                    quiet: Callable[[], bool] | None = None) -> bool:
    """Give a started `consumer`'s fetches that leave no partition of their broker out (while `quiet()`, when
    given) a wait of `idle_wait_ms`, never shorter than the consumer's own. Returns whether the fetcher could
    be adapted."""
    fetcher: Any = getattr(consumer, "_fetcher", None)
    plan = getattr(fetcher, "_get_actions_per_node", None)
    if plan is None or not hasattr(fetcher, "_select_read_replica"):
        log.debug("aiokafka's fetcher has no per-node plan: fetches keep fetch_max_wait_ms")
        return False

    def planned(assignment: Any) -> Any:
        actions = plan(assignment)
        requests = actions[0]
        if requests and (quiet is None or quiet()):
            partitions_of: dict[int, int] = {}
            for tp in assignment.tps:
                node = fetcher._select_read_replica(tp)
                partitions_of[node] = partitions_of.get(node, 0) + 1
            for node, request in requests:
                named = sum(len(partitions) for _, partitions in request.topics)
                wait = getattr(request, "_max_wait_ms", None)  # None: another aiokafka, its request is left as is
                if named == partitions_of.get(node) and wait is not None and wait < idle_wait_ms:
                    request._max_wait_ms = idle_wait_ms
        return actions

    fetcher._get_actions_per_node = planned
    return True
