"""A consumer DAG declared once, in its Airflow file: the bridge, started without `--dag`, reads the rule from
Airflow's own PartitionedAssetTimetable, serves DAGs deployed after it started, and says why each run started."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import create_engine
from assetbus.infra.airflow_stack import CLI, AirflowStack
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics
from tests.helpers import wait_for
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.stack import DAG_IDS
from tests.integration.airflow.support import bridge_args, emit_partitions, runs_of

DECLARED_CLICKS = AssetRef(name="airflow_demo.declared_clicks", uri="s3://example/declared_clicks")

LATE_DAG = '''
from airflow.sdk import DAG, Asset, AllowedKeyMapper, PartitionedAssetTimetable, task

feed = Asset("{asset}", uri="s3://example/{asset}")

with DAG(dag_id="{dag_id}", catchup=False, tags=["assetbus"],
         schedule=PartitionedAssetTimetable(assets=feed, partition_mapper_config={{
             feed: AllowedKeyMapper(["eu", "us"])}})):

    @task
    def load(dag_run=None):
        return dag_run.partition_key

    load()
'''


@pytest.fixture(scope="module", autouse=True)
def readiness_topics(infra: Settings, airflow_stack: AirflowStack) -> Iterator[None]:
    """Delete the readiness topics the bridges created for the DAGs of this module, after it (those of the
    session's DAGs, the examples' consumers among them, are the session's to delete)."""
    yield

    async def drop() -> None:
        engine = create_engine(airflow_stack.database_url)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(text("SELECT dag_id FROM consumer_dags WHERE fileloc LIKE 'airflow:%'"))
                dag_ids = [row.dag_id for row in rows if row.dag_id not in DAG_IDS]
        finally:
            await engine.dispose()
        topics = Topics(prefix=airflow_stack.topic_prefix)
        await delete_topics(infra.kafka, [topics.readiness(dag_id) for dag_id in dag_ids])

    asyncio.run(drop())


@pytest.fixture
def bridge(airflow_stack: AirflowStack) -> Iterator[None]:
    """The bridge without `--dag`, syncing from Airflow every second."""
    airflow_stack.service("declared-bridge", *bridge_args(airflow_stack,
        "--poll-interval-s", "1", "--sync-interval-s", "1", "--group-id", f"declared-{uuid.uuid4().hex[:6]}"))
    yield
    airflow_stack.stop_service("declared-bridge")


async def rule_of(engine: AsyncEngine, dag_id: str) -> dict[str, Any] | None:
    async with engine.connect() as conn:
        row = (await conn.execute(text("SELECT fileloc, definition, active FROM consumer_dags WHERE dag_id = :d"),
                                  {"d": dag_id})).one_or_none()
    return dict(row._mapping) if row is not None and row.active else None


async def test_a_dag_declared_only_in_airflow_gets_one_run_per_ready_day_with_its_events_in_conf(
        bridge: None, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    rule = await wait_for(lambda: rule_of(stack_engine, "declared_daily_clicks"), timeout_s=120, interval=0.5,
                          what="the bridge to read the DAG's rule from Airflow")
    assert rule["fileloc"] == "airflow:declared_daily_clicks"
    assert rule["definition"]["schedule"] == {"kind": "asset", "asset": "airflow_demo.declared_clicks",
                                              "mapping": {"kind": "hourly_to_daily", "timezone": "UTC"}}
    days = [datetime(2026, 11, 3, tzinfo=UTC), datetime(2026, 11, 4, tzinfo=UTC)]
    hours = [day + timedelta(hours=h) for day in days for h in range(24)]
    receipts = await emit_partitions(airflow_stack, DECLARED_CLICKS, [(h.isoformat(), h) for h in hours[:-1]])

    async def first_day_done() -> list[dict[str, object]]:
        runs = await runs_of(stack_engine, "declared_daily_clicks")
        return runs if runs and runs[0]["status"] == "success" else []

    runs = await wait_for(first_day_done, timeout_s=240, interval=1, what="the first day's Airflow run to succeed")
    assert [r["partition_key"] for r in runs] == ["2026-11-03"]  # the second day lacks one hour: no run
    airflow_runs = airflow_api.runs("declared_daily_clicks")
    assert [r["partition_key"] for r in airflow_runs] == ["2026-11-03"]
    conf = airflow_runs[0]["conf"]["assetbus"]
    assert conf["event_ids"] == [r.id for r in receipts[:24]]
    assert {e["asset"] for e in conf["events"]} == {"airflow_demo.declared_clicks"}
    source = conf["events"][0]["source"]
    assert source["dag_id"] == "upstream_feed" and source["task_id"] == "load" and source["run_id"].startswith("feed-")
    assert "24 event(s) of airflow_demo.declared_clicks" in airflow_runs[0]["note"]
    assert airflow_api.xcom("declared_daily_clicks", airflow_runs[0]["dag_run_id"], "report") == \
        {"partition_key": "2026-11-03", "events": 24}


async def test_a_dag_deployed_after_the_bridge_started_is_served_without_a_manual_sync(
        bridge: None, airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    await wait_for(lambda: rule_of(stack_engine, "declared_daily_clicks"), timeout_s=120, interval=0.5,
                   what="the bridge's first sync")
    suffix = uuid.uuid4().hex[:6]
    dag_id, asset = f"late_regions_{suffix}", f"airflow_demo.late_regions_{suffix}"
    (airflow_stack.dags_folder / f"{dag_id}.py").write_text(LATE_DAG.format(dag_id=dag_id, asset=asset))
    rule = await wait_for(lambda: rule_of(stack_engine, dag_id), timeout_s=180, interval=0.5,
                          what="the new DAG's rule synced by the running bridge")
    assert rule["definition"]["schedule"]["mapping"] == {"kind": "static", "mapping": {"eu": "eu", "us": "us"},
                                                         "require_all": False}
    ref = AssetRef(name=asset, uri=f"s3://example/{asset}")
    await emit_partitions(airflow_stack, ref, [("eu", None), ("mars", None)])  # mars is not an allowed key

    async def done() -> list[dict[str, object]]:
        runs = await runs_of(stack_engine, dag_id)
        return runs if runs and runs[0]["status"] == "success" else []

    runs = await wait_for(done, timeout_s=240, interval=1, what="the new DAG's run to succeed")
    assert [r["partition_key"] for r in runs] == ["eu"]
    assert [r["partition_key"] for r in airflow_api.runs(dag_id)] == ["eu"]


def test_a_dag_without_a_readiness_rule_is_named_by_doctor_and_by_the_sync(airflow_stack: AirflowStack) -> None:
    metadata = airflow_stack.metadata_url

    def assetbus(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLI), *args], env=airflow_stack.env(COLUMNS="300"), capture_output=True,
                              text=True, timeout=120, check=False)

    async def named() -> subprocess.CompletedProcess[str] | None:
        done = assetbus("airflow", "sync", "--metadata-url", metadata)
        return done if "declared_weekly_fan_out" in done.stdout else None

    synced = asyncio.run(wait_for(named, timeout_s=120, interval=1, what="Airflow to parse the fan-out DAG"))
    assert synced.returncode == 1  # a tagged DAG without a rule fails the sync
    assert "FanOutMapper" in synced.stdout and "declared_daily_clicks" in synced.stdout
    checks = {c["name"]: c for c in json.loads(assetbus("doctor", "--json").stdout)["checks"]}
    rules = checks["airflow DAG rules"]
    assert rules["status"] == "warn" and "declared_weekly_fan_out" in rules["detail"]
    assert "declared_daily_clicks" not in rules["detail"]  # its rule was read from its timetable


def dag_processor_log(stack: AirflowStack, dag_file: str) -> str:
    """What Airflow's dag-processor logged while parsing `dag_file` (its per-file logs, every parse)."""
    return "".join(path.read_text(errors="replace")
                   for path in sorted((stack.airflow.home / "logs" / "dag_processor").rglob(f"{dag_file}.log*")))


@pytest.mark.timeout(600)
async def test_without_the_metadata_database_a_dag_deployed_while_the_bridge_runs_gets_one_run_per_ready_partition(
        airflow_stack: AirflowStack, airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    """The bridge is given Airflow's REST API only; the rule comes from the provider's cluster policy, which
    registers it from the dag-processor as Airflow parses the new file."""
    name = "rest-only-bridge"
    airflow_stack.service(name, "airflow-bridge", "--poll-interval-s", "1", "--sync-interval-s", "1",
                          "--group-id", f"rest-only-{uuid.uuid4().hex[:6]}")
    try:
        suffix = uuid.uuid4().hex[:6]
        dag_id, asset = f"rest_only_regions_{suffix}", f"airflow_demo.rest_only_regions_{suffix}"
        (airflow_stack.dags_folder / f"{dag_id}.py").write_text(LATE_DAG.format(dag_id=dag_id, asset=asset))
        rule = await wait_for(lambda: rule_of(stack_engine, dag_id), timeout_s=180, interval=0.5,
                              what="the new DAG's rule, registered by the cluster policy and activated by the bridge")
        assert rule["fileloc"] == f"airflow:{dag_id}"
        assert rule["definition"]["schedule"]["mapping"] == {"kind": "static", "mapping": {"eu": "eu", "us": "us"},
                                                             "require_all": False}
        assert f"registered the readiness rule of Airflow DAG {dag_id}" in dag_processor_log(airflow_stack,
                                                                                          f"{dag_id}.py")
        ref = AssetRef(name=asset, uri=f"s3://example/{asset}")
        await emit_partitions(airflow_stack, ref, [("eu", None), ("mars", None), ("us", None)])

        async def done() -> list[dict[str, object]]:
            runs = await runs_of(stack_engine, dag_id)
            return runs if len(runs) == 2 and all(r["status"] == "success" for r in runs) else []

        runs = await wait_for(done, timeout_s=240, interval=1, what="a run per ready partition to succeed")
        assert sorted(str(r["partition_key"]) for r in runs) == ["eu", "us"]  # mars is not an allowed key
        assert sorted(r["partition_key"] for r in airflow_api.runs(dag_id)) == ["eu", "us"]

        # a tagged DAG with no rule to learn: the bridge says so, the dag-processor says why, doctor points there
        said = "Airflow DAG declared_weekly_fan_out is tagged assetbus but has no readiness rule: no readiness rule " \
               "registered for it"
        assert said in airflow_stack.log_tail(name, chars=1_000_000)
        refused = dag_processor_log(airflow_stack, "declared_weekly_fan_out.py")
        assert "cannot register the readiness rule of Airflow DAG declared_weekly_fan_out" in refused
        assert "422 untranslatable_timetable" in refused and "FanOutMapper" in refused
        doctor = await asyncio.to_thread(subprocess.run, [str(CLI), "doctor", "--json"], env=airflow_stack.env(),
                                         capture_output=True, text=True, timeout=120, check=False)
        check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["airflow DAG rules"]
        assert "declared_weekly_fan_out" in check["detail"]
        assert "`Airflow DAG <dag_id> is tagged assetbus but has no readiness rule: <why>`" in check["fix"]
    finally:
        airflow_stack.stop_service(name)
