"""kill -9 of the broker leading the most emissions partitions while 20,000 emissions stream, then its restart
(alone, and with one persister of three killed at the same moment): every emission is stored once and answered.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.schemas import ReceiptStatus, Topics
from tests.cluster.flow import (
    Flow,
    failover_figures,
    read_receipts,
    receipt_counts,
    spread_assets,
    spread_commands,
    stream,
)
from tests.cluster.harness import NODES, LocalCluster, busiest_leader, describe, group_members, topic_config
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import (
    PersisterProcess,
    distinct,
    read_topic,
    stored_command_ids,
    stored_count,
    stored_event_ids,
)

N = 20_000
RATE_PER_S = 1_000.0  # a 20 s stream; the kill lands after a third of it
PERSISTER_ARGS = ("--max-records", "500")


def report(cluster: LocalCluster, case: str, figures: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Print the figures (they go into the issue's note) and keep them in the cluster's home."""
    line = json.dumps({"case": case, **figures}, sort_keys=True)
    with (cluster.infra.home / "failover-figures.jsonl").open("a") as out:
        out.write(line + "\n")
    with capsys.disabled():
        print(f"\n[cluster figures] {line}")


async def failover(cluster: LocalCluster, topics: Topics, engine: AsyncEngine, token: str,
                   persisters: Callable[..., Awaitable[PersisterProcess]], *, persister_count: int,
                   kill_a_persister: bool) -> tuple[Flow, dict[str, Any], list[PersisterProcess]]:
    assets = await spread_assets(engine, topics.core()[topics.emissions])
    items = spread_commands(token, topics, assets, N)
    partitions = await describe(cluster.connection(), topics.emissions)
    assert all(len(p["replicas"]) == NODES for p in partitions), "the topic creator's default on 3 brokers is RF 3"
    assert (await topic_config(cluster.connection(), topics.emissions))["min.insync.replicas"] == "2"
    victim = await busiest_leader(cluster.connection(), topics.emissions)
    bootstrap = cluster.connection().bootstrap  # every node, the victim included
    processes = [await persisters(bootstrap, *PERSISTER_ARGS) for _ in range(persister_count)]

    async def joined() -> bool:
        return await group_members(cluster.connection(), f"{topics.prefix}-persister") == persister_count

    await wait_for(joined, timeout_s=90, interval=0.5, what=f"{persister_count} persisters in the group")

    flow, stop, killed_at = Flow(), asyncio.Event(), 0.0
    reader = asyncio.create_task(read_receipts(cluster.connection(), topics.receipts, flow, stop))
    restarted: list[asyncio.Task[None]] = []

    async def restart_once_flowing() -> None:
        await wait_for(lambda: _true(flow.answered_after(killed_at) >= 500), timeout_s=120,
                       what="receipts for emissions sent after the kill")
        await cluster.restart()

    async def on_sent(count: int) -> None:
        nonlocal killed_at
        if killed_at or count < N // 3 or flow.answered < 2_000:
            return
        cluster.kill(victim)
        if kill_a_persister:
            await processes[0].kill()
        killed_at = time.time()
        restarted.append(asyncio.create_task(restart_once_flowing()))

    try:
        await stream(cluster.connection(), topics.emissions, items, flow, rate_per_s=RATE_PER_S, on_sent=on_sent)
        assert killed_at, "the kill must land while the emissions stream"
        await wait_for(lambda: _true(flow.answered >= N), timeout_s=180, interval=0.2,
                       what=f"a receipt for every emission ({flow.answered} of {N})")
        await restarted[0]
    finally:
        stop.set()
        await reader
        for task in restarted:
            task.cancel()

    figures = {**failover_figures(flow, killed_at), **receipt_counts(flow), "killed_node": victim,
               "persisters": persister_count, "persister_killed": kill_a_persister}
    return flow, figures, processes


async def _true(value: bool) -> bool:
    return value


async def assert_exactly_once(cluster: LocalCluster, topics: Topics, engine: AsyncEngine, flow: Flow) -> int:
    """One stored event per emission; every emission answered `accepted` with that event's id, however often it
    was handled (a command redelivered by Kafka or resent by the SDK gets the answer of its first handling)."""
    assert await stored_count(engine) == N
    assert sorted(await stored_command_ids(engine)) == sorted(flow.sent_at)
    assert set(flow.receipts) == set(flow.sent_at)
    firsts = [flow.first_receipt(c)[1] for c in flow.sent_at]
    assert all(r.status is ReceiptStatus.ACCEPTED for rs in flow.receipts.values() for _, r in rs)
    assert all(len({r.event_id for _, r in rs}) == 1 for rs in flow.receipts.values())
    assert {r.event_id for r in firsts} == await stored_event_ids(engine)
    events = await read_topic(cluster.connection().bootstrap, topics.asset_events, distinct(N, "event_id"),
                              timeout_s=90)
    return len(events)


async def assert_rejoined(cluster: LocalCluster, topics: Topics) -> None:
    async def all_in_sync() -> bool:
        return all(len(p["isr"]) == NODES for p in await describe(cluster.connection(), topics.emissions))

    await wait_for(all_in_sync, timeout_s=120, interval=0.5, what="the restarted node to rejoin every ISR")


@pytest.mark.parametrize(("persister_count", "kill_a_persister", "name"), [
    (1, False, "leader-kill"),
    (3, True, "leader-and-persister-kill"),
], ids=["leader-alone", "leader-and-one-of-three-persisters"])
async def test_a_leader_kill_during_20000_emissions_stores_and_answers_each_exactly_once(
        cluster: LocalCluster, cluster_topics: Topics, engine: AsyncEngine, token: str,
        persisters: Callable[..., Awaitable[PersisterProcess]], capsys: pytest.CaptureFixture[str],
        persister_count: int, kill_a_persister: bool, name: str) -> None:
    flow, figures, processes = await failover(cluster, cluster_topics, engine, token, persisters,
                                              persister_count=persister_count, kill_a_persister=kill_a_persister)
    figures["asset_event_records"] = await assert_exactly_once(cluster, cluster_topics, engine, flow)
    await assert_rejoined(cluster, cluster_topics)
    report(cluster, name, figures, capsys)
    killed = processes[:1] if kill_a_persister else []
    for victim in killed:
        assert victim.process is not None and victim.process.returncode == -9
    for survivor in processes[len(killed):]:
        assert await survivor.terminate() == 0, survivor.logs()
