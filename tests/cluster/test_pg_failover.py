"""kill -9 of the PostgreSQL primary while emissions stream, then promotion of its synchronous standby (the old
primary stays dead): every emission is answered, every receipt's event is in the new primary exactly once."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import create_engine
from assetbus.schemas import ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.cluster.flow import (
    Flow,
    failover_figures,
    read_receipts,
    receipt_counts,
    spread_assets,
    spread_commands,
    stream,
)
from tests.cluster.harness import group_members
from tests.cluster.pg_pair import PgPair
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import PersisterProcess

N = 20_000
RATE_PER_S = 1_000.0
"""A 20 s stream, as in the broker failover tests; the kill lands after a third of it."""
PERSISTER_ARGS = ("--max-records", "500")


async def _true(value: bool) -> bool:
    return value


def chunk_retries(log_dir: Path) -> int:
    """How often the persister retried a chunk because the database was away (its log lines)."""
    return sum(log.read_text(errors="replace").count("retrying the chunk") for log in log_dir.glob("persister-*.log"))


async def stored_events(engine: AsyncEngine) -> list[tuple[uuid.UUID, int]]:
    async with engine.connect() as conn:
        rows = await conn.execute(text("SELECT command_id, id FROM asset_events"))
        return [(row[0], int(row[1])) for row in rows]


@pytest.mark.parametrize("failed_retries", [0, 3], ids=["promoted-at-once", "promoted-after-3-failed-retries"])
async def test_a_primary_kill_and_standby_promotion_during_a_stream_loses_and_doubles_no_event(
        pg_pair: PgPair, infra: Settings, topics: Topics, token: str, token_secret: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], failed_retries: int) -> None:
    """`failed_retries`: the promotion waits until the persister has found no writable node that often (the old
    primary dead, the standby still read-only), as an HA manager's detection time would make it."""
    started = time.monotonic()
    connection = infra.kafka
    engine = create_engine(pg_pair.url)  # the libpq multi-host URL: always the node that takes writes
    try:
        assets = await spread_assets(engine, topics.core()[topics.emissions])
    finally:
        await engine.dispose()
    items = spread_commands(token, topics, assets, N)
    group = f"{topics.prefix}-persister"
    persister = PersisterProcess(bootstrap=connection.bootstrap, db_url=pg_pair.url, topics=topics,
                                 token_secret=token_secret, group_id=group, log_dir=tmp_path, args=PERSISTER_ARGS)
    await persister.start()
    try:
        async def joined() -> bool:
            return await group_members(connection, group) == 1

        await wait_for(joined, timeout_s=60, interval=0.2, what=f"the persister in its group:\n{persister.logs()}")

        flow, stop, killed_at, promoted_at = Flow(), asyncio.Event(), 0.0, 0.0
        reader = asyncio.create_task(read_receipts(connection, topics.receipts, flow, stop))
        promotions: list[asyncio.Task[None]] = []

        async def promote(retries_before: int) -> None:
            nonlocal promoted_at

            async def retried() -> bool:
                return await asyncio.to_thread(chunk_retries, tmp_path) >= retries_before + failed_retries

            await wait_for(retried, timeout_s=60, interval=0.02, what=f"{failed_retries} failed chunk retries")
            await asyncio.to_thread(pg_pair.replicas.promote)
            promoted_at = time.time()

        async def on_sent(count: int) -> None:
            nonlocal killed_at
            if killed_at or count < N // 3 or flow.answered < 2_000:
                return
            retries_before = chunk_retries(tmp_path)
            pg_pair.replicas.crash_primary()
            killed_at = time.time()
            promotions.append(asyncio.create_task(promote(retries_before)))

        try:
            await stream(connection, topics.emissions, items, flow, rate_per_s=RATE_PER_S, on_sent=on_sent)
            assert killed_at, "the kill must land while the emissions stream"
            await promotions[0]
            await wait_for(lambda: _true(flow.answered >= N), timeout_s=120, interval=0.2,
                           what=f"a receipt for every emission ({flow.answered} of {N}):\n{persister.logs()}")
        finally:
            stop.set()
            await reader
            for task in promotions:
                task.cancel()
        assert await persister.terminate() == 0, persister.logs()
    finally:
        await persister.stop()

    assert not pg_pair.replicas.primary.running(), "the old primary stays dead"
    new_primary = create_engine(pg_pair.node_url(pg_pair.replicas.standby_port))
    try:
        async with new_primary.connect() as conn:
            assert (await conn.execute(text("SELECT pg_is_in_recovery()"))).scalar_one() is False
        stored = await stored_events(new_primary)
    finally:
        await new_primary.dispose()

    by_command: dict[uuid.UUID, list[int]] = {}
    for command_id, event_id in stored:
        by_command.setdefault(command_id, []).append(event_id)
    stored_ids = {event_id for _, event_id in stored}
    answered_ids = {c: {r.event_id for _, r in rs if r.status is not ReceiptStatus.REJECTED}
                    for c, rs in flow.receipts.items()}
    accepted = {c for c, rs in flow.receipts.items() if any(r.status is ReceiptStatus.ACCEPTED for _, r in rs)}
    lost = sorted(str(c) for c, ids in answered_ids.items() if not ids <= stored_ids)
    doubled = sorted(str(c) for c, ids in by_command.items() if len(ids) > 1)
    split = sorted(str(c) for c, ids in answered_ids.items() if len(ids) > 1)

    figures: dict[str, Any] = {
        **receipt_counts(flow), **failover_figures(flow, killed_at), "rate_per_s": RATE_PER_S,
        "accepted_commands": len(accepted), "stored": len(stored), "lost": len(lost), "doubled": len(doubled),
        "failed_retries_before_promotion": failed_retries, "outage_s": round(promoted_at - killed_at, 3),
        "test_s": round(time.monotonic() - started, 1),
        "persister_chunk_retries": chunk_retries(tmp_path),
    }
    with capsys.disabled():
        print(f"\n[pg failover figures] {json.dumps(figures, sort_keys=True)}")

    assert set(flow.receipts) == set(flow.sent_at), "every emission is answered"
    assert figures["rejected"] == 0
    assert not lost, f"receipts for events the new primary lacks: {lost[:5]}"
    assert not doubled, f"commands stored twice: {doubled[:5]}"
    assert not split, f"commands answered with two event ids: {split[:5]}"
    assert set(by_command) == set(flow.sent_at), "each emission is stored once in the new primary"
    assert len(stored) == N
