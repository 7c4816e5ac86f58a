"""assetbus as a message queue of Airflow's common-messaging provider, in a real Airflow 3.3.2 with its triggerer.

- An AssetWatcher whose trigger is `MessageQueueTrigger(scheme="assetbus", dag_id=...)` starts an
  asset-triggered run of `queue_watched` once assetbus marks a partition of the consumer DAG `queue_watched`
  ready (an event of its upstream asset stored; tests/integration/airflow/dags/queue_watched.py).
- Airflow finds the provider through the provider info's `queues`: the scheme and the queue-URI forms make
  the same `AssetbusReadinessTrigger`, and a wrong assetbus URI fails with what it should look like.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import emit_partitions

WATCHED = "queue_watched"
FEED = AssetRef(name="airflow_test.queue_feed", uri="s3://example/queue_feed")
CONSUMER = f'''
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity

{WATCHED} = ConsumerDag(dag_id="{WATCHED}", schedule=AssetWait("{FEED.name}", mapping=Identity()))
'''


@pytest.fixture
def consumer_dag(airflow_stack: AirflowStack, infra: Settings) -> Iterator[None]:
    """The assetbus consumer DAG `queue_watched` (one readiness signal per partition of FEED), for this test."""
    folder = airflow_stack.home / "queue_consumers"
    folder.mkdir(exist_ok=True)
    airflow_stack.cli("assets", "register", FEED.name, FEED.uri)
    (folder / f"{WATCHED}.py").write_text(CONSUMER)
    airflow_stack.cli("dags", "sync", str(folder))
    yield
    (folder / f"{WATCHED}.py").write_text("")  # defined no more: the sync deactivates it
    airflow_stack.cli("dags", "sync", str(folder))
    # the DAG's watcher stays subscribed, idle once the topic is gone (the brokers create no topics)
    asyncio.run(delete_topics(infra.kafka, [Topics(prefix=airflow_stack.topic_prefix).readiness(WATCHED)]))


@pytest.mark.usefixtures("consumer_dag")
async def test_a_message_queue_trigger_on_the_assetbus_queue_runs_the_dag_when_a_partition_is_ready(
        airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    async def parsed() -> bool:  # not among the DAGs the stack waited for
        try:
            await asyncio.to_thread(airflow_api.get, f"/dags/{WATCHED}")
        except httpx.HTTPStatusError as error:
            if error.response.status_code != 404:
                raise
            return False
        return True

    await wait_for(parsed, timeout_s=120, interval=1.0, what=f"Airflow to parse {WATCHED}")
    before = {run["dag_run_id"] for run in airflow_api.runs(WATCHED)}
    partition = f"q-{uuid.uuid4().hex[:8]}"
    await emit_partitions(airflow_stack, FEED, [(partition, None)])

    async def new_run() -> dict[str, Any] | None:
        runs = [run for run in await asyncio.to_thread(airflow_api.runs, WATCHED) if run["dag_run_id"] not in before]
        return runs[0] if runs else None

    run = await wait_for(new_run, timeout_s=240, interval=1.0, what="an asset-triggered run of queue_watched")
    assert run is not None
    assert run["run_type"] == "asset_triggered"
    finished = await asyncio.to_thread(airflow_api.wait_run, WATCHED, run["dag_run_id"])
    assert finished["state"] == "success"
    assert [signal["partition_key"] for signal in airflow_api.xcom(WATCHED, run["dag_run_id"], "consume")] == \
        [partition]


RESOLVE = '''
import json, warnings
from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
from airflow.providers_manager import ProvidersManager

warnings.simplefilter("ignore")  # common-messaging deprecates the queue-URI form
found = {
    "queues": ProvidersManager().queue_class_names,
    "scheme": MessageQueueTrigger(scheme="assetbus", dag_id="orders", conn_id="c").serialize(),
    "queue": MessageQueueTrigger(queue="assetbus://readiness/orders?conn_id=c").serialize(),
    "queue_and_kwargs": MessageQueueTrigger(queue="assetbus://readiness/orders", group_id="g").serialize(),
}
try:
    MessageQueueTrigger(queue="assetbus://orders").serialize()
except ValueError as error:
    found["error"] = str(error)
print(json.dumps(found))
'''


def test_airflow_finds_the_assetbus_queue_in_both_forms(airflow_stack: AirflowStack) -> None:
    done = subprocess.run([str(airflow_stack.airflow.venv / "bin" / "python"), "-c", RESOLVE],
                          env=airflow_stack.airflow.env(), capture_output=True, text=True, timeout=180, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "assetbus.producers.airflow.queues.AssetbusMessageQueueProvider" in found["queues"]
    trigger = "assetbus.producers.airflow.triggers.AssetbusReadinessTrigger"
    assert found["scheme"] == found["queue"] == \
        [trigger, {"dag_id": "orders", "conn_id": "c", "group_id": None}]
    assert found["queue_and_kwargs"] == [trigger, {"dag_id": "orders", "conn_id": None, "group_id": "g"}]
    assert found["error"] == ("assetbus queue 'assetbus://orders': 'orders' is not a kind of assetbus queue (the "
                              "one kind is 'readiness'); expected assetbus://readiness/<dag_id>[?conn_id=<connection>"
                              "&group_id=<consumer group>]")
