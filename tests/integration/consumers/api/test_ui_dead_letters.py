"""The page's dead-letter view hides the emitter's token that an unreadable emission record carries."""

from __future__ import annotations

from typing import Any

import httpx

from assetbus.consumers.api.ui_auth import operator_token
from assetbus.consumers.persister import Persister
from assetbus.producers import issue_token
from assetbus.schemas import AssetRef, Provenance, SourceKind, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import commands, produce

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1, try_number=1)


async def test_the_dead_letter_view_redacts_the_token_of_a_broken_emission(
        api_client: httpx.AsyncClient, persister: Persister, infra: Settings, topics: Topics,
        token_secret: str) -> None:
    token = issue_token(token_secret, SOURCE)
    [command] = commands(token, topics, ORDERS, 1, key="broken")
    broken = command.model_dump_json().encode()[:-1]  # one byte short: not JSON, dead-lettered
    assert token.encode() in broken
    await produce(infra.bootstrap_servers, topics.emissions, [(b"orders", broken)])
    operator = {"Authorization": f"Bearer {operator_token(token_secret, 'alice')}"}

    async def dead_letters() -> list[dict[str, Any]]:
        answer = await api_client.get("/ui/api/dead-letters", headers=operator)
        assert answer.status_code == 200, answer.text
        return list(answer.json())

    [letter] = await wait_for(dead_letters, timeout_s=60, what="the dead letter on the page")
    assert letter["reason"] == "not_json" and letter["value_size"] == len(broken)
    preview = letter["value_preview"]
    assert token not in preview and token.split(".")[2] not in preview  # not the token, not its signature
    assert preview == broken.decode().replace(token, "<redacted>")
    assert (await api_client.get("/ui/api/dead-letters")).status_code == 401
