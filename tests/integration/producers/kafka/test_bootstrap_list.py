"""A comma-separated bootstrap list works for the persister and the scheduler, in-process and as `assetbus run`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity, Scheduler, SchedulerConfig
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.runs import list_runs
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import replaced
from tests.integration.consumers.persister.streams import PersisterProcess
from tests.integration.consumers.scheduler.conftest import signals_on

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")


def two_names_for_the_broker(infra: Settings) -> str:
    """The local broker twice, under two names (`127.0.0.1:19092,localhost:19092`), as a cluster is named."""
    first = infra.kafka.bootstrap_servers[0]
    host, _, port = first.rpartition(":")
    other = f"localhost:{port}" if host in ("127.0.0.1", "localhost") else first
    return f"{first},{other}"


async def register_orders(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ORDERS.name, ORDERS.uri)


async def test_persister_and_scheduler_run_on_a_comma_separated_bootstrap_list(
        infra: Settings, engine: AsyncEngine, topics: Topics, token_secret: str, persister_config: PersisterConfig,
        scheduler_config: SchedulerConfig, define_dags: Callable[..., Awaitable[object]]) -> None:
    bootstrap = two_names_for_the_broker(infra)
    listed = KafkaConnection.from_environ({"KAFKA_BOOTSTRAP_SERVERS": bootstrap})
    assert len(listed.bootstrap_servers) == 2
    await register_orders(engine)
    await define_dags(ConsumerDag(dag_id="listed", schedule=AssetWait("orders", mapping=Identity())))
    token = task_token(token_secret, "ingest", "run-1", "load")
    async with Persister(replaced(persister_config, kafka=listed)), \
            Scheduler(replaced(scheduler_config, kafka=listed)), \
            AsyncEmitter(bootstrap, token, topics=topics, receipt_timeout_s=20) as emitter:
        receipt = await emitter.emit(ORDERS, partition_key="2026-12-01", dedupe_key="listed-1")
        assert receipt.accepted
        (signal,) = await signals_on(bootstrap, topics.readiness("listed"), 1)
    assert signal.partition_key == "2026-12-01"
    async with engine.connect() as conn:
        (run,) = await list_runs(conn, dag_id="listed", limit=10)
    assert run.run_id == signal.run_id


async def test_assetbus_run_persister_takes_a_comma_separated_bootstrap_list(
        infra: Settings, engine: AsyncEngine, db_url: str, topics: Topics, token_secret: str, tmp_path: Path) -> None:
    bootstrap = two_names_for_the_broker(infra)
    await register_orders(engine)
    process = PersisterProcess(bootstrap=bootstrap, db_url=db_url, topics=topics, token_secret=token_secret,
                               group_id=f"{topics.prefix}-persister", log_dir=tmp_path)
    await process.start()
    try:
        token = task_token(token_secret, "ingest", "run-1", "load")
        async with AsyncEmitter(bootstrap, token, topics=topics, receipt_timeout_s=30) as emitter:
            receipt = await emitter.emit(ORDERS, dedupe_key="from-the-cli")
        assert receipt.accepted, process.logs()
    finally:
        assert await process.terminate() == 0, process.logs()
    assert "Unable to bootstrap" not in process.logs()
