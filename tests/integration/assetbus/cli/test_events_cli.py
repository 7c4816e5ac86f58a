"""`assetbus events list | tail` and `assetbus lag` on events a real persister stored."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from assetbus.consumers.persister import Persister
from assetbus.producers import issue_token
from assetbus.schemas import AssetRef, Provenance, SourceKind, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.assetbus.cli.conftest import Ops
from tests.integration.consumers.persister.streams import commands, encoded, produce

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1, try_number=1)


async def _emit(infra: Settings, topics: Topics, token_secret: str, n: int, key: str, partition: str | None) -> None:
    batch = commands(issue_token(token_secret, SOURCE), topics, ORDERS, n, key=key)
    if partition is not None:
        batch = [c.model_copy(update={"partition_key": partition}) for c in batch]
    await produce(infra.bootstrap_servers, topics.emissions, encoded(batch))


async def test_events_list_filters_by_asset_partition_and_time(ops: Ops, persister: Persister, infra: Settings,
                                                               topics: Topics, token_secret: str) -> None:
    assert (await ops("assets", "register", ORDERS.name, ORDERS.uri)).exit_code == 0
    await _emit(infra, topics, token_secret, 3, "a", "2026-12-01")
    await _emit(infra, topics, token_secret, 2, "b", "2026-12-02")

    async def stored() -> bool:
        return len(await ops.json("events", "list")) == 5

    await wait_for(stored, timeout_s=60, what="five stored events")
    day_one = await ops.json("events", "list", "--asset", "orders", "--partition", "2026-12-01")
    assert [e["partition_key"] for e in day_one] == ["2026-12-01"] * 3
    assert day_one[0]["id"] > day_one[-1]["id"], "newest first"
    assert {e["task_id"] for e in day_one} == {"load"} and day_one[0]["asset_uri"] == ORDERS.uri
    assert len(await ops.json("events", "list", "--since", "1h")) == 5
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert await ops.json("events", "list", "--since", future) == []
    assert await ops.json("events", "list", "--asset", "unknown") == []
    page = await ops.json("events", "list", "--limit", "2")
    older = await ops.json("events", "list", "--before", str(page[-1]["id"]))
    assert len(page) == 2 and len(older) == 3 and max(e["id"] for e in older) < page[-1]["id"]
    table = await ops("events", "list", "--partition", "2026-12-02")
    assert table.exit_code == 0 and "ingest/run-1/load" in table.output
    bad = await ops("events", "list", "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.output


async def test_events_tail_prints_new_events_and_lag_reaches_zero(ops: Ops, persister: Persister, infra: Settings,
                                                                  topics: Topics, token_secret: str) -> None:
    assert (await ops("assets", "register", ORDERS.name, ORDERS.uri)).exit_code == 0
    await _emit(infra, topics, token_secret, 1, "old", None)

    async def first() -> list[dict[str, object]]:
        return list(await ops.json("events", "list"))

    [old] = await wait_for(first, timeout_s=60, what="the first event")
    # From the old event on (not "from now", which would race with the persister storing the new ones).
    tail = asyncio.create_task(ops("events", "tail", "--from-id", str(old["id"]), "--count", "2", "--timeout", "60",
                                   "--json"))
    await _emit(infra, topics, token_secret, 2, "new", "p1")
    result = await tail
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 2 and all('"partition_key":"p1"' in line for line in lines), lines
    assert await ops.json("events", "tail", "--from-id", "0", "--count", "1")  # --json on tail is JSON Lines

    group = f"{topics.prefix}-persister"

    async def caught_up() -> bool:
        rows = await ops.json("lag", "--group", group)
        return bool(rows) and sum(r["lag"] for r in rows) == 0 and sum(r["end"] for r in rows) == 3

    await wait_for(caught_up, timeout_s=60, what="the persister's group to commit every emission")
    shown = await ops("lag")
    assert shown.exit_code == 0 and group in shown.output and "0 record(s) behind" in shown.output
