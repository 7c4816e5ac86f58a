"""The non-Python producer: examples/shell/emit.sh sends a command with Kafka's console producer (no
Python involved); the persister accepts it, answers with a receipt and stores one event."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import register_asset
from assetbus.producers import task_token
from assetbus.schemas import Receipt, ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.integration.consumers.persister.streams import read_topic

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "shell" / "emit.sh"


async def _emit(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec("sh", str(SCRIPT), *args, env={**os.environ, **env},
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode().strip(), err.decode()


async def test_shell_emitter_command_is_accepted_and_stored(persister: Persister, infra: Settings, topics: Topics,
                                                            token_secret: str, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
    env = {"ASSETBUS_TOKEN": task_token(token_secret, "ingest", "run-1", "load", try_number=2),
           "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "ASSETBUS_TOPIC_PREFIX": topics.prefix,
           "KAFKA_LIBS": str(infra.infra.home / f"kafka-{infra.infra.kafka_version}" / "libs")}
    code, command_id, err = await _emit("orders", "s3://bucket/orders/", "2026-12-01", "batch-41",
                                        '{"rows": 1200}', env=env)
    assert code == 0, err
    correlation = uuid.UUID(command_id)

    records = await read_topic(infra.bootstrap_servers, topics.receipts,
                               lambda rs: any(json.loads(r.value)["correlation_id"] == str(correlation) for r in rs))
    receipt = next(Receipt.model_validate_json(r.value) for r in records
                   if json.loads(r.value)["correlation_id"] == str(correlation))
    assert receipt.status is ReceiptStatus.ACCEPTED, receipt
    async with engine.connect() as conn:
        row = (await conn.execute(text("SELECT partition_key, dedupe_key, extra, task_id, try_number FROM "
                                       "asset_events WHERE command_id = :c"), {"c": correlation})).one()
    assert tuple(row) == ("2026-12-01", "batch-41", {"rows": 1200}, "load", 2)


async def test_shell_emitter_without_token_says_what_is_missing(infra: Settings) -> None:
    code, _, err = await _emit("orders", "s3://bucket/orders/", env={"ASSETBUS_TOKEN": ""})
    assert code != 0 and "ASSETBUS_TOKEN" in err
