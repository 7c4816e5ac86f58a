"""`assetbus dlq list | show | redrive`: a dead letter is seen with its reason (its emitter token redacted),
redriven once fixed, never twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.producers import issue_token
from assetbus.schemas import AssetRef, Provenance, SourceKind, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.assetbus.cli.conftest import Ops
from tests.integration.consumers.persister.streams import commands, produce

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1, try_number=1)


async def test_a_fixed_dead_letter_is_redriven_once(ops: Ops, persister: Persister, infra: Settings, topics: Topics,
                                                    token_secret: str, engine: AsyncEngine, tmp_path: Path) -> None:
    assert (await ops("assets", "register", ORDERS.name, ORDERS.uri)).exit_code == 0
    token = issue_token(token_secret, SOURCE)
    [command] = commands(token, topics, ORDERS, 1, key="fixed")
    broken = command.model_dump_json().encode()[:-1]  # one byte short: not JSON
    await produce(infra.bootstrap_servers, topics.emissions, [(b"orders", broken)])

    async def dead_letters() -> list[dict[str, Any]]:
        return list(await ops.json("dlq", "list"))

    [letter] = await wait_for(dead_letters, timeout_s=60, what="the dead letter")
    assert letter["reason"] == "not_json" and letter["key"] == "orders" and letter["redrive"] is None
    assert letter["source"].startswith(f"{topics.emissions}:")
    shown = await ops.json("dlq", "show", str(letter["offset"]))
    assert token.encode() in broken and token not in shown["value"] and token.split(".")[2] not in shown["value"]
    assert shown["value"] == broken.decode().replace(token, "<redacted>")
    assert shown["headers"]["assetbus.dlq.reason"] == "not_json"
    printed = await ops("dlq", "show", str(letter["offset"]))
    assert printed.exit_code == 0 and "<redacted>" in printed.output and token not in printed.output
    assert (await ops("dlq", "show", "999")).exit_code == 1

    as_is = await ops("dlq", "redrive", str(letter["offset"]))
    assert as_is.exit_code == 1 and "would be dead-lettered again" in as_is.output

    fixed = tmp_path / "fixed.json"
    fixed.write_bytes(command.model_dump_json().encode())
    done = await ops.json("dlq", "redrive", str(letter["offset"]), "--value-file", str(fixed), "--note", "cut short")
    assert done["value"] == "replaced" and done["to"].startswith(f"{topics.emissions}:")

    async def stored() -> bool:
        async with engine.connect() as conn:
            found = await conn.execute(text("SELECT count(*) FROM asset_events WHERE command_id = :c"),
                                       {"c": command.command_id})
            return bool(found.scalar_one() == 1)

    await wait_for(stored, timeout_s=60, what="the redriven command to be stored")
    again = await ops("dlq", "redrive", str(letter["offset"]), "--value-file", str(fixed))
    assert again.exit_code == 1 and "redriven already" in again.output
    [listed] = await ops.json("dlq", "list")
    assert listed["redrive"]["note"] == "cut short" and listed["redrive"]["to"] == done["to"]
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM dlq_redrives"))).scalar_one() == 1
