"""kill -9 of the PostgreSQL primary while `assetbus run api` (on the multi-host URL) takes task-state PUTs, then
promotion of its synchronous standby: every PUT the API acknowledged is in the new primary; a PUT in flight at the
kill may be answered 503, never acknowledged and lost."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from assetbus.consumers.storage import create_engine
from assetbus.consumers.storage.state import TaskKey, list_task_state
from assetbus.infra.ports import free_port
from assetbus.producers.tokens import task_token
from assetbus.schemas import Topics, task_instance_id
from assetbus.settings import Settings
from tests.cluster.pg_pair import PgPair
from tests.helpers import wait_for

DAG, RUN = "ingest", "run-1"
WRITERS = 8
"""Concurrent clients, each its own task instance, each PUTting keys 0, 1, 2, … in turn."""
BEFORE_KILL, AFTER_PROMOTION = 600, 600
"""Acknowledged PUTs before the kill, and after the promotion, before the writers stop."""


@pytest.mark.parametrize("detection_s", [0.0, 1.0], ids=["promoted-at-once", "promoted-after-1s"])
async def test_every_task_state_put_acknowledged_before_a_primary_kill_is_in_the_promoted_standby(
        pg_pair: PgPair, infra: Settings, topics: Topics, token_secret: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], detection_s: float) -> None:
    """`detection_s`: the promotion waits that long after the kill, as an HA manager's detection would (the API
    meanwhile finds the old primary dead and the standby read-only)."""
    port = free_port()
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.kafka.bootstrap, "DATABASE_URL": pg_pair.url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
    log = (tmp_path / "api.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "api", "--port", str(port), "--log-level", "WARNING",
        env=env, stdout=log, stderr=log)
    log.close()
    acked: dict[str, list[tuple[str, int, float]]] = {}  # task → (key, value, when) acknowledged
    statuses: dict[str, int] = {}
    stop = asyncio.Event()
    kill_at = killed_at = promoted_at = 0.0

    async def writer(client: httpx.AsyncClient, task: str) -> None:
        path = f"/execution/store/ti/{task_instance_id(DAG, RUN, task, -1)}"
        headers = {"Authorization": f"Bearer {task_token(token_secret, DAG, RUN, task)}"}
        i = 0
        while not stop.is_set():
            try:
                response = await client.put(f"{path}/k{i}", json={"value": i}, headers=headers)
                outcome = str(response.status_code)
            except httpx.HTTPError as error:
                outcome, response = type(error).__name__, None
            statuses[outcome] = statuses.get(outcome, 0) + 1
            if response is not None and response.status_code == 204:
                acked.setdefault(task, []).append((f"k{i}", i, time.time()))
                i += 1
            elif response is not None and response.status_code == 503:
                await asyncio.sleep(0.05)  # as a client backs off after a 503

    def count() -> int:
        return sum(len(v) for v in acked.values())

    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            async def up() -> bool:
                try:
                    return (await client.get("/healthz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(up, timeout_s=60, what="the API to answer")
            writers = [asyncio.create_task(writer(client, f"t{n}")) for n in range(WRITERS)]
            try:
                async def reached(n: int) -> bool:
                    return count() >= n

                await wait_for(lambda: reached(BEFORE_KILL), timeout_s=60, interval=0.01, what="PUTs before the kill")
                acked_before_kill, kill_at = count(), time.time()
                await asyncio.to_thread(pg_pair.replicas.crash_primary)
                killed_at = time.time()
                await asyncio.sleep(detection_s)  # the HA manager's detection time, not a wait for a condition
                await asyncio.to_thread(pg_pair.replicas.promote)
                promoted_at = time.time()
                await wait_for(lambda: reached(acked_before_kill + AFTER_PROMOTION), timeout_s=60, interval=0.02,
                               what=f"PUTs after the promotion ({statuses}):\n{(tmp_path / 'api.log').read_text()}")
            finally:
                stop.set()
                await asyncio.gather(*writers)
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)

    new_primary = create_engine(pg_pair.node_url(pg_pair.replicas.standby_port))
    try:
        async with new_primary.connect() as conn:
            present = {task: {e.key: e.value for e in await list_task_state(conn, TaskKey(DAG, RUN, task, -1))}
                       for task in acked}
    finally:
        await new_primary.dispose()
    lost = [(task, key) for task, puts in acked.items() for key, value, _ in puts if present[task].get(key) != value]
    times = sorted(when for puts in acked.values() for _, _, when in puts)
    stall = max(b - a for a, b in itertools.pairwise(times) if b > kill_at)  # the kill's gap, or later
    first_ack_after_kill = min(t for t in times if t > killed_at) - killed_at
    figures = {"detection_s": detection_s, "puts_acknowledged": count(), "acknowledged_before_kill": acked_before_kill,
               "present_in_new_primary": count() - len(lost), "lost": len(lost), "statuses": statuses,
               "kill_s": round(killed_at - kill_at, 3), "promotion_s": round(promoted_at - killed_at, 3),
               "longest_gap_between_acks_s": round(stall, 3),
               "first_ack_after_kill_s": round(first_ack_after_kill, 3)}
    with capsys.disabled():
        print(f"\n[api pg failover figures] {json.dumps(figures, sort_keys=True)}")

    assert code == 0, (tmp_path / "api.log").read_text()
    assert not lost, f"acknowledged PUTs the new primary lacks: {lost[:5]}"
    # a pooled connection the kill interrupted is a fault of the database (503), never a 500
    assert set(statuses) <= {"204", "503"}, statuses
