"""Schemathesis against the published OpenAPI spec: no generated request gets a server error, and
every answer conforms to the documented statuses, content types and schemas."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import LATEST_VERSION
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.task_assets import attach_task_asset
from assetbus.producers import task_token
from assetbus.schemas import task_instance_id

EXAMPLES = 150
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
async def orders_outlet(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
        await attach_task_asset(conn, "ingest", "load", "orders", "outlet")


@pytest.mark.usefixtures("orders_outlet", "persister")
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")  # schemathesis internals
async def test_no_generated_request_gets_a_server_error(api_url: str, token_secret: str) -> None:
    async with httpx.AsyncClient(base_url=api_url) as client:
        spec = (await client.get("/openapi.json")).json()
    schema = schemathesis.openapi.from_dict(spec)
    own_ti = str(task_instance_id("ingest", "run-1", "load", -1))
    token = task_token(token_secret, "ingest", "run-1", "load")
    ti_key = schema["/execution/store/ti/{task_instance_id}/{key}"]
    ti_clear = schema["/execution/store/ti/{task_instance_id}"]
    asset_value = schema["/execution/store/asset/by-name/value"]
    current = {"Assetbus-API-Version": LATEST_VERSION}
    anything = st.one_of(schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE))
    # the caller's own task instance and a registered asset, so that the happy paths are reached too
    own = st.one_of(
        *(op.as_strategy(path_parameters={"task_instance_id": own_ti}, headers=current)
          for op in (*ti_key.values(), *ti_clear.values())),
        *(op.as_strategy(query={"name": "orders"}, headers=current) for op in asset_value.values()),
    )
    statuses: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=st.booleans().flatmap(lambda targeted: own if targeted else anything))
    def fuzz(case: Any) -> None:
        response = case.call_and_validate(base_url=api_url, headers={"Authorization": f"Bearer {token}"},
                                          checks=CHECKS, timeout=30)
        statuses.append(response.status_code)

    await asyncio.to_thread(fuzz)
    assert len(statuses) >= EXAMPLES // 2
    assert all(status < 500 for status in statuses)
    assert {204, 403, 422} <= set(statuses), sorted(set(statuses))
