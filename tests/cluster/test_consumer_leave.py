"""A service's `stop()` is bounded even when its group coordinator does not answer: the shell leaves the group
within `leave_timeout_s` (the group then drops the member after its session timeout) instead of holding the
process for a whole request timeout, as a coordinator moving after a broker restart did in CI."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.schemas import Topics
from tests.cluster.harness import LocalCluster

LEAVE_TIMEOUT_S = 2.0
"""Without it, an unanswered LeaveGroup holds `stop()` for aiokafka's request timeout, 40 s."""


async def coordinator_of(cluster: LocalCluster, group: str) -> int:
    admin = AIOKafkaAdminClient(**cluster.connection().client_kwargs())
    await admin.start()
    try:
        return int(await admin.find_coordinator(group))
    finally:
        await admin.close()


async def test_stop_leaves_within_its_bound_while_the_coordinator_is_frozen(
        cluster: LocalCluster, cluster_topics: Topics, caplog: pytest.LogCaptureFixture) -> None:
    group = f"{cluster_topics.prefix}-leave"

    async def handle(records: Any) -> None:
        return None

    shell = ServiceShell(cluster.connection(), ConsumerSettings(topics=(cluster_topics.emissions,), group_id=group,
                                                                leave_timeout_s=LEAVE_TIMEOUT_S), handle)
    await shell.start()
    await shell.wait_assigned()
    pid = cluster.pids()[await coordinator_of(cluster, group)]
    os.kill(pid, signal.SIGSTOP)  # a few seconds: below the controller's broker session timeout, so never fenced
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="assetbus.kafka"):
            await shell.stop()
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert shell.leaving is not None
    await asyncio.wait_for(shell.leaving, 60)  # the thawed coordinator answers: the close ends, nothing leaks
    assert took < LEAVE_TIMEOUT_S + 3, f"stop() took {took:.1f} s with the coordinator frozen"
    assert shell.consumer is None
    assert any("leaving the consumer group did not finish in time" in r.getMessage() for r in caplog.records)
