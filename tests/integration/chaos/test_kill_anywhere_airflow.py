"""The chaos harness's Airflow kinds (the table is in test_kill_anywhere.py), against the session's real Airflow.

- the bridge: readiness signals of `orders_replica`, kept paused (Airflow creates its runs, never executes
  them); one Airflow DAG run per partition, exactly once;
- the forwarder: stored events of an asset Airflow knows; one Airflow asset event per stored event, exactly
  once;
- the watcher trigger: readiness signals of `chaos_watched` (whose events start no run), handed to Airflow by
  Airflow's triggerer, which is what is killed -9 here; at least one Airflow asset event per signal, deduped by
  the signal's run id.
"""

from __future__ import annotations

import asyncio
import signal as signals
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.forwarding import (
    KILLED_QUICKLY,
    KILLED_QUICKLY_ENV,
    airflow_asset_id,
    airflow_events,
    emit,
)
from tests.integration.airflow.support import (
    BRIDGE_KILLED_QUICKLY,
    QUICK_TAKEOVER,
    REPLICA_FEED,
    emit_partitions,
    restart_triggerer,
)
from tests.integration.airflow.watching import publish, readiness_signal, signal_run_id, watched_events
from tests.integration.chaos.harness import (
    EXACTLY_ONCE,
    Consumer,
    Effects,
    Kind,
    assert_promise,
    assetbus,
    at_least_once,
    command,
    run_chaos,
)

pytestmark = pytest.mark.airflow

PAUSED = "orders_replica"
CHAOS_FEED = AssetRef(name="forward.chaos_feed", uri="s3://forward/chaos_feed")
"""Declared by tests/integration/airflow/dags/forward_assets.py."""
WATCHED = "chaos_watched"
"""The DAG of tests/integration/airflow/dags/chaos_watched.py: its watcher's events start no run."""
WATCHED_ASSET = "airflow_test.chaos_watched"


@dataclass
class Setting:
    infra: Settings
    stack: AirflowStack
    api: AirflowApi


def _counted(identities: list[str]) -> Effects:
    return Effects(len(identities), len(set(identities)))


def _fresh_keys(n: int) -> list[str]:
    """Partition keys no other test (nor an earlier round of this one) uses."""
    prefix = f"chaos-{uuid.uuid4().hex[:6]}"
    return [f"{prefix}-{i:02d}" for i in range(n)]


async def _bridge_kind(t: Setting) -> Kind:
    stack, api = t.stack, t.api
    api.set_paused(PAUSED, True)
    keys = _fresh_keys(30)

    async def offer() -> None:  # a trickle longer than a bridge's start: it creates a burst of runs faster than a
        await emit_partitions(stack, REPLICA_FEED, [(key, None) for key in keys], every_s=0.5)  # kill lands in it

    async def runs() -> Effects:
        return _counted([r["partition_key"] for r in await asyncio.to_thread(api.runs, PAUSED)
                         if r["partition_key"] in keys])

    # a bridge killed while it creates a run holds that run's lease, which its successor waits out: 10 s here
    return Kind("bridge", EXACTLY_ONCE, len(keys), command("bridge", assetbus(
        "run", "airflow-bridge", "--dag", PAUSED, *BRIDGE_KILLED_QUICKLY), stack.env()), offer, runs, kills=1,
        trickle=True, poll_s=0.5, timeout_s=180)


async def _forwarder_kind(t: Setting) -> Kind:
    stack, api = t.stack, t.api
    asset_id = await asyncio.to_thread(airflow_asset_id, api, stack, CHAOS_FEED, "forward_assets")
    keys = _fresh_keys(60)

    async def offer() -> None:  # a trickle, as for the bridge, longer than a restart takes (lease included)
        await emit(stack, CHAOS_FEED, keys, extra={"rows": 7}, every_s=0.5)

    async def posted() -> Effects:
        events = await asyncio.to_thread(airflow_events, api, asset_id)
        return _counted([e["extra"]["assetbus"]["event_id"] for e in events if e["partition_key"] in keys])

    # a forwarder killed mid-POST holds its lease on the event: 13 s here (more than 3 times a 4 s Airflow timeout)
    return Kind("forwarder", EXACTLY_ONCE, len(keys), command("forwarder", assetbus(
        "run", "airflow-forwarder", "--group-id", f"chaos-forwarder-{uuid.uuid4().hex[:8]}", "--asset",
        CHAOS_FEED.name, *KILLED_QUICKLY), stack.env(**KILLED_QUICKLY_ENV)),
        offer, posted, kills=1, trickle=True, poll_s=0.5, timeout_s=180)
    # one kill: a second process started after its predecessor's kill caught up the trickle's backlog at once and
    # finished the work before the last process started (a CI run, seed 79727: kills at 12 and 60 of 60)


@dataclass
class Triggerer:
    """Airflow's triggerer of the session's stack: a kill -9 of its supervisor and runner starts its successor
    at once (as a process supervisor would)."""

    stack: AirflowStack

    async def kill(self) -> None:
        await asyncio.to_thread(restart_triggerer, self.stack, signals.SIGKILL, QUICK_TAKEOVER)

    async def stop(self) -> int:
        return 0  # it runs on for the tests after; the stack stops it


async def _watcher_kind(t: Setting) -> Kind:
    stack, api = t.stack, t.api
    topics = Topics(prefix=stack.topic_prefix)
    await ensure_topics(t.infra.kafka, topics, {topics.readiness(WATCHED): 1})
    signals = [readiness_signal(f"chaos-{i:02d}", WATCHED) for i in range(20)]
    run_ids = {s.run_id for s in signals}
    (asset,) = [a for a in api.get("/assets", name_pattern=WATCHED_ASSET)["assets"] if a["name"] == WATCHED_ASSET]

    async def offer() -> None:  # a trickle: the triggerer hands a burst over at once
        await publish(stack, topics.readiness(WATCHED), *signals, every_s=0.3)

    async def handed_over() -> Effects:
        events = await asyncio.to_thread(watched_events, api, asset_id=asset["id"])
        return _counted([run_id for e in events if (run_id := signal_run_id(e)) in run_ids])

    async def start(log_dir: Path, n: int) -> Consumer:
        del log_dir, n  # the stack's triggerer runs already; each kill starts its successor
        return Triggerer(stack)

    # one kill: a successor takes the dead triggerer's trigger over only once its heartbeat is 8 s old and its
    # Kafka session (10 s) has expired
    return Kind("watcher-trigger", at_least_once("the signal's run id"), len(signals), start, offer, handed_over,
                kills=1, trickle=True, poll_s=0.5, timeout_s=180)


KINDS: dict[str, Callable[[Setting], Awaitable[Kind]]] = {
    "bridge": _bridge_kind,
    "forwarder": _forwarder_kind,
    "watcher-trigger": _watcher_kind,
}


@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_an_airflow_side_consumer_killed_9_at_random_points_keeps_its_promise(
        infra: Settings, airflow_stack: AirflowStack, airflow_api: AirflowApi, tmp_path: Path, kind_name: str) -> None:
    kind = await KINDS[kind_name](Setting(infra, airflow_stack, airflow_api))
    await assert_promise(kind, await run_chaos(kind, tmp_path))
