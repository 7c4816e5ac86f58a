"""`PUT /airflow/dags/{dag_id}/rule` and `GET /airflow/kafka` on the real database: what the provider's cluster
policy registers from Airflow's dag-processor, inactive until a sync sees the DAG tagged in Airflow's REST API,
and what a connection test asks for; both only with the worker credential."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.declared import NOT_REGISTERED, apply_declared_dags, registered_translations
from assetbus.consumers.airflow.workers import SCOPE_AIRFLOW_WORKER, worker_source
from assetbus.consumers.scheduler import AssetWait, ConsumerDag
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.dags import get_dag
from assetbus.producers import task_token
from assetbus.producers.tokens import issue_token
from assetbus.schemas import Topics
from assetbus.settings import Settings

pytestmark = pytest.mark.integration

M = "airflow.partition_mappers."


def timetable(asset: str, mapper: dict[str, Any]) -> dict[str, Any]:
    """What `encode_timetable` makes of `PartitionedAssetTimetable(assets=Asset(asset), partition_mapper_config=
    {asset: mapper})` in apache-airflow 3.3.2."""
    ref = {"__type": "asset", "name": asset, "uri": f"s3://x/{asset}", "group": "asset", "extra": {}}
    return {"__type": "airflow.timetables.simple.PartitionedAssetTimetable", "__var": {
        "asset_condition": ref, "default_partition_mapper": {"__type": M + "identity.IdentityMapper", "__var": {}},
        "partition_mapper_config": [[ref, mapper]]}}


REGIONS = timetable("regions", {"__type": M + "allowed_key.AllowedKeyMapper", "__var": {"allowed_keys": ["eu", "us"]}})
FAN_OUT = timetable("regions", {"__type": M + "fan_out.FanOutMapper", "__var": {}})


@pytest.fixture
def worker(token_secret: str) -> dict[str, str]:
    """The `Authorization` of a worker credential, as `assetbus token worker` mints it."""
    credential = issue_token(token_secret, worker_source("test"), subject="airflow-worker:test",
                             scope=SCOPE_AIRFLOW_WORKER, publish=[])
    return {"Authorization": f"Bearer {credential}"}


async def test_a_registered_rule_waits_for_the_dag_to_be_seen_tagged_then_serves(
        api_client: httpx.AsyncClient, engine: AsyncEngine, worker: dict[str, str]) -> None:
    put = await api_client.put("/airflow/dags/regional/rule", json={"timetable": REGIONS, "description": "by region"},
                               headers=worker)
    assert put.status_code == 200, put.text
    answer = put.json()
    assert (answer["dag_id"], answer["change"], answer["active"]) == ("regional", "created", False)
    assert answer["definition"]["description"] == "by region"
    assert answer["definition"]["schedule"] == {"kind": "asset", "asset": "regions", "mapping": {
        "kind": "static", "mapping": {"eu": "eu", "us": "us"}, "require_all": False}}
    again = await api_client.put("/airflow/dags/regional/rule", json={"timetable": REGIONS, "description": "by region"},
                                 headers=worker)
    assert again.json()["change"] == "unchanged"  # the dag-processor parses the file again: nothing changes
    async with engine.connect() as conn:
        stored = await get_dag(conn, "regional")
    assert stored is not None and (stored.fileloc, stored.active) == ("airflow:regional", False)

    async with engine.begin() as conn:  # a sync that sees `regional` (and `unknown`) tagged in Airflow
        await register_asset(conn, "regions", "s3://x/regions")
        report = await apply_declared_dags(conn, await registered_translations(conn, ["regional", "unknown"]))
    assert report.active == ["regional"] and report.without_rule == {"unknown": NOT_REGISTERED}
    async with engine.begin() as conn:  # a sync that no longer sees it tagged
        report = await apply_declared_dags(conn, await registered_translations(conn, []))
    assert report.deactivated == ["regional"]


async def test_a_timetable_without_an_assetbus_equivalent_is_refused_naming_the_mapper(
        api_client: httpx.AsyncClient, engine: AsyncEngine, worker: dict[str, str]) -> None:
    refused = await api_client.put("/airflow/dags/fanned/rule", json={"timetable": FAN_OUT}, headers=worker)
    assert refused.status_code == 422
    assert refused.json()["code"] == "untranslatable_timetable" and "FanOutMapper" in refused.json()["message"]
    cron = await api_client.put("/airflow/dags/nightly/rule", headers=worker, json={"timetable": {
        "__type": "airflow.timetables.trigger.CronTriggerTimetable", "__var": {"expression": "0 0 * * *"}}})
    assert cron.status_code == 422 and "not a PartitionedAssetTimetable" in cron.json()["message"]
    malformed = await api_client.put("/airflow/dags/odd/rule", headers=worker, json={"timetable": {
        "__type": "airflow.timetables.simple.PartitionedAssetTimetable", "__var": {"asset_condition": [1, 2]}}})
    assert malformed.status_code == 422 and malformed.json()["code"] == "untranslatable_timetable"
    async with engine.connect() as conn:
        assert await get_dag(conn, "fanned") is None and await get_dag(conn, "nightly") is None


async def test_a_rule_synced_from_a_file_is_not_overwritten_from_airflow(
        api_client: httpx.AsyncClient, worker: dict[str, str],
        engine: AsyncEngine, define_dags: Callable[..., Awaitable[object]]) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "regions", "s3://x/regions")
    await define_dags(ConsumerDag(dag_id="from_file", schedule=AssetWait("regions")))
    refused = await api_client.put("/airflow/dags/from_file/rule", json={"timetable": REGIONS}, headers=worker)
    assert refused.status_code == 409 and refused.json()["code"] == "not_an_airflow_rule", refused.text
    async with engine.connect() as conn:
        kept = await get_dag(conn, "from_file")
    assert kept is not None and (kept.fileloc, kept.active) == ("/dags/test_dags.py", True)


async def test_only_the_worker_credential_registers_rules_and_reads_the_workers_kafka(
        api_client: httpx.AsyncClient, worker: dict[str, str], token_secret: str, infra: Settings,
        topics: Topics) -> None:
    task = {"Authorization": f"Bearer {task_token(token_secret, 'd', 'r', 't')}"}
    forbidden = await api_client.put("/airflow/dags/regional/rule", json={"timetable": REGIONS}, headers=task)
    assert forbidden.status_code == 403 and forbidden.json()["code"] == "insufficient_scope"
    assert (await api_client.put("/airflow/dags/regional/rule", json={"timetable": REGIONS})).status_code == 401
    anonymous = await api_client.get("/airflow/kafka")
    assert anonymous.status_code == 401
    named = await api_client.get("/airflow/kafka", headers=worker)
    assert named.json() == {"bootstrap_servers": infra.kafka.bootstrap, "topic_prefix": topics.prefix}
