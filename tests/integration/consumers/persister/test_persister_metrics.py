"""The Prometheus endpoint counts what the persister did: outcomes, batches, transactions, lag."""

from __future__ import annotations

import asyncio
import uuid

from assetbus.benchmarks.scrape import Metrics, scrape
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import replaced, wait_for
from tests.integration.consumers.persister.streams import commands, encoded, produce, read_topic


async def test_metrics_endpoint_counts_outcomes_batches_transactions_and_lag(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, persister_config: PersisterConfig) -> None:
    valid = commands(token, topics, orders, 3)
    duplicate = valid[0].model_copy(update={"command_id": uuid.uuid4()})  # same dedupe key, another command
    unknown = commands(token, topics, AssetRef(name="nope", uri="s3://nope/"), 1)
    config = replaced(persister_config, metrics_port=0, metrics_host="127.0.0.1")
    async with Persister(config) as persister:
        assert persister.metrics_port
        await produce(infra.bootstrap_servers, topics.emissions,
                      [*encoded([*valid, duplicate, *unknown]), (b"k", b"not json at all")])
        await read_topic(infra.bootstrap_servers, topics.receipts, lambda r: len(r) == 5)
        url = f"http://127.0.0.1:{persister.metrics_port}/metrics"

        async def caught_up() -> Metrics | None:
            metrics = await asyncio.to_thread(scrape, url)
            done = metrics.value("assetbus_persister_dead_lettered") == 1
            return metrics if done and metrics.value("assetbus_persister_consumer_lag") == 0 else None

        metrics = await wait_for(caught_up, what="the last batch counted and the lag at zero")

    assert metrics.value("assetbus_persister_accepted") == 3
    assert metrics.value("assetbus_persister_duplicate") == 1
    assert metrics.families["assetbus_persister_rejected"]["assetbus_persister_rejected_total"] == [
        ({"code": "asset_not_found"}, 1.0)]
    assert metrics.families["assetbus_persister_dead_lettered"]["assetbus_persister_dead_lettered_total"] == [
        ({"reason": "not_json"}, 1.0)]
    batches = metrics.histogram("assetbus_persister_batch_size")
    assert batches.count >= 1 and batches.total == 6
    assert metrics.histogram("assetbus_persister_db_commit_seconds").count >= 1
    # the duplicate's event is republished unless it fell in the same batch as the original
    assert metrics.value("assetbus_persister_events_published") in (3, 4)
