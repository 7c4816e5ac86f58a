"""The end-to-end demo: register an asset, run a persister, emit three times, show the receipts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from assetbus.settings import Settings
from assetbus.topics import ensure_topics
from consumers.persister import Persister, PersisterConfig
from consumers.storage import create_engine, register_asset
from producers import AsyncEmitter, task_token
from schemas import AssetRef, Receipt, Topics

ORDERS = AssetRef(name="demo.orders", uri="s3://demo-bucket/orders/")
UNKNOWN = AssetRef(name="demo.not-registered", uri="s3://demo-bucket/nowhere/")


async def run_demo(settings: Settings, show: Callable[[str, Receipt], None]) -> list[Receipt]:
    """Emit accepted, duplicate and rejected commands through a real persister; return the receipts."""
    topics = Topics(prefix=settings.topic_prefix)
    await ensure_topics(settings.bootstrap_servers, topics)
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as conn:
            await register_asset(conn, ORDERS.name, ORDERS.uri)
    finally:
        await engine.dispose()

    run_id = f"demo-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"
    token = task_token(settings.token_secret, "demo_ingest", run_id, "load_orders")
    config = PersisterConfig(bootstrap_servers=settings.bootstrap_servers, database_url=settings.database_url,
                             token_secret=settings.token_secret, topics=topics)
    receipts: list[Receipt] = []
    async with Persister(config), AsyncEmitter(settings.bootstrap_servers, token, topics=topics,
                                               receipt_timeout_s=30) as emitter:
        steps = [
            ("new batch 41 of orders", ORDERS, "batch-41"),
            ("batch 41 again (a retry)", ORDERS, "batch-41"),
            ("an unregistered asset", UNKNOWN, "batch-41"),
        ]
        for label, asset, dedupe_key in steps:
            receipt = await emitter.emit(asset, extra={"rows": 100, "path": "s3://demo-bucket/orders/41.parquet"},
                                         partition_key="2026-10-01",
                                         partition_date=datetime(2026, 10, 1, tzinfo=UTC),
                                         dedupe_key=dedupe_key, raise_on_reject=False)
            receipts.append(receipt)
            show(label, receipt)
    return receipts
