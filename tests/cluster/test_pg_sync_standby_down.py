"""The synchronous standby stopped: the primary's commits wait for it, so an emission through the persister gets no
receipt until the standby is back, then `accepted` (the receipt still follows the commit); `assetbus doctor` fails
the synchronous-standby check while it is away and names it once it is back."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from assetbus.consumers.storage import create_engine
from assetbus.schemas import ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.cluster.flow import Flow, read_receipts, spread_assets, spread_commands, stream
from tests.cluster.harness import group_members
from tests.cluster.pg_pair import USER, PgPair
from tests.cluster.pg_replica import STANDBY_NAME
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import PersisterProcess

WARM, HELD = 20, 20
"""Emissions answered before the standby stops, and emissions sent while it is away."""
HELD_S = 5.0
"""How long the test watches for a receipt that must not come."""


async def doctor_check(pg_pair: PgPair, infra: Settings, topics: Topics) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": pg_pair.url, "KAFKA_BOOTSTRAP_SERVERS": infra.kafka.bootstrap,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix}
    process = await asyncio.create_subprocess_exec(str(Path(sys.executable).parent / "assetbus"), "doctor", "--json",
                                                   env=env, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert "synchronous standby" in checks, (out, err)
    return {**checks["synchronous standby"], "exit": process.returncode}


async def test_a_stopped_synchronous_standby_holds_receipts_until_it_is_back(
        pg_pair: PgPair, infra: Settings, topics: Topics, token: str, token_secret: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    replicas = pg_pair.replicas
    replicas.sql(replicas.primary, f'GRANT pg_monitor TO "{USER}"')  # doctor reads pg_stat_replication's states
    engine = create_engine(pg_pair.url)
    try:
        assets = await spread_assets(engine, topics.core()[topics.emissions], per_partition=1)
    finally:
        await engine.dispose()
    items = spread_commands(token, topics, assets, WARM + HELD)  # unique dedupe keys: every held one is a write
    warm, held = items[:WARM], items[WARM:]
    group = f"{topics.prefix}-persister"
    persister = PersisterProcess(bootstrap=infra.kafka.bootstrap, db_url=pg_pair.url, topics=topics,
                                 token_secret=token_secret, group_id=group, log_dir=tmp_path)
    connected = await doctor_check(pg_pair, infra, topics)
    assert connected["status"] == "ok" and STANDBY_NAME in connected["detail"] and "sync" in connected["detail"]
    await persister.start()
    flow, stop = Flow(), asyncio.Event()
    reader = asyncio.create_task(read_receipts(infra.kafka, topics.receipts, flow, stop))
    try:
        async def joined() -> bool:
            return await group_members(infra.kafka, group) == 1

        await wait_for(joined, timeout_s=60, interval=0.2, what=f"the persister in its group:\n{persister.logs()}")

        async def answered(n: int) -> bool:
            return flow.answered >= n

        await stream(infra.kafka, topics.emissions, warm, flow, rate_per_s=200)
        await wait_for(lambda: answered(WARM), timeout_s=60, interval=0.1, what="the warm-up receipts")

        await asyncio.to_thread(replicas.stop_standby)
        stopped_at = time.time()
        await stream(infra.kafka, topics.emissions, held, flow, rate_per_s=200)
        await asyncio.sleep(HELD_S)  # watching for receipts that must not come: nothing to wait for
        answered_while_down = flow.answered - WARM
        waiting = replicas.sql(replicas.primary, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
        away = await doctor_check(pg_pair, infra, topics)

        back_at = time.time()  # the standby's start: the waiting commits return once it streams again
        await asyncio.to_thread(replicas.start_standby)
        await wait_for(lambda: answered(WARM + HELD), timeout_s=60, interval=0.05,
                       what=f"the receipts once the standby is back ({flow.answered}):\n{persister.logs()}")
        last_receipt_at = max(flow.first_receipt(c.command_id)[0] for c in held)
        back = await doctor_check(pg_pair, infra, topics)
        assert await persister.terminate() == 0, persister.logs()
    finally:
        stop.set()
        await reader
        await persister.stop()

    standby = create_engine(pg_pair.node_url(replicas.standby_port))
    try:
        async with standby.connect() as conn:
            on_standby = (await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one()
    finally:
        await standby.dispose()
    statuses = {r.status for c in held for _, r in flow.receipts[c.command_id]}
    figures = {"answered_while_standby_down": answered_while_down, "held_s": round(back_at - stopped_at, 1),
               "backends_waiting_in_SyncRep": int(waiting), "answered_after_standby_back": flow.answered - WARM,
               "last_receipt_after_standby_start_s": round(last_receipt_at - back_at, 3),
               "stored_on_standby": on_standby,
               "doctor_while_down": away["status"], "doctor_once_back": back["status"]}
    with capsys.disabled():
        print(f"\n[sync standby down figures] {json.dumps(figures, sort_keys=True)}\n  doctor: {away['detail']}")

    assert answered_while_down == 0, "no receipt while the commit waits for the standby"
    assert int(waiting) >= 1, "the persister's commit waits for the synchronous standby"
    assert away["status"] == "fail" and away["exit"] == 1
    assert "commits wait for a synchronous standby that is not connected: receipts stall" in away["detail"]
    assert statuses == {ReceiptStatus.ACCEPTED}
    assert on_standby == WARM + HELD, "every answered event is on the standby"
    assert back["status"] == "ok" and STANDBY_NAME in back["detail"]
