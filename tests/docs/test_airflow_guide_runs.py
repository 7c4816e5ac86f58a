"""docs/airflow.md runs as a reader follows it, in order, against a real Airflow 3.3.

The guide's walk-through starts from an empty directory: it configures Airflow (its metadata database on
assetbus's PostgreSQL server, beside this run's own database, dropped afterwards), starts assetbus's services and
Airflow's components in the background of the guide's shell, unpauses the example DAGs, triggers the two
producers and waits for the consumer runs. This test runs every block of the guide with the runner the other
guides use (tests/docs/runner.py), on this run's own database, topic prefix, token key and ports, and then
checks the guide's promise in Airflow itself: exactly one run per partition of each consumer DAG.

The one block it does not run is the reader's `pip install` of Airflow and the SDK (minutes, from PyPI): a
hidden setup step links the guide's `airflow-venv` to `.venv-airflow`, which `make airflow-venv` builds with
the same packages from the same checkout (tests/unit/docs/test_airflow_guide.py checks that it does).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from assetbus.infra.airflow import AIRFLOW_VENV
from assetbus.infra.databases import default_database_name, drop_database
from assetbus.infra.ports import free_port
from assetbus.schemas import EmissionCommand, Topics
from tests.docs.guide import check_something_runs, parse_guide
from tests.docs.runner import run_guide
from tests.docs.shell import Shell
from tests.docs.warm_cli import WarmCli
from tests.integration.airflow.stack import require_airflow_venv

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "airflow.md"
WORKDIR = "airflow-try"
"""The fresh directory the guide makes and works in."""


@pytest.fixture
def airflow_guide_shell(guide_cwd: Path, guide_env: dict[str, str], warm_cli: WarmCli | None) -> Iterator[Shell]:
    """The guide's shell, with a free port for Airflow's API server and the Airflow venv to link to."""
    require_airflow_venv()
    env = {name: value for name, value in guide_env.items() if not name.startswith("AIRFLOW")}
    env.update({"AIRFLOW_PORT": str(free_port()), "DOCS_AIRFLOW_VENV": str(AIRFLOW_VENV)})
    try:
        with Shell(guide_cwd, env, prelude=warm_cli.alias() if warm_cli else "") as shell:
            yield shell
    finally:  # the database the guide's `assetbus airflow metadata-db` made beside this run's own
        server = guide_env["DATABASE_URL"]
        asyncio.run(drop_database(server, default_database_name(server)))


def airflow_runs(cwd: Path, port: str, dag_id: str) -> list[dict[str, Any]]:
    """The DAG's runs, as Airflow's REST API lists them (the guide's admin account, from its passwords file)."""
    password = json.loads((cwd / WORKDIR / "airflow" / "passwords.json").read_text())["assetbus"]
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, timeout=30) as http:
        token = http.post("/auth/token", json={"username": "assetbus", "password": password}).json()["access_token"]
        answer = http.get(f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100},
                          headers={"Authorization": f"Bearer {token}"})
        answer.raise_for_status()
        runs: list[dict[str, Any]] = answer.json()["dag_runs"]
        return runs


async def emitted(bootstrap_servers: str, prefix: str) -> list[EmissionCommand]:
    """Every emission command on the run's emissions topic: `emitted_at` is the task's clock when it emitted."""
    topics = Topics(prefix=prefix)
    partitions = [TopicPartition(topics.emissions, p) for p in range(topics.core()[topics.emissions])]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end = await consumer.end_offsets(partitions)
        found: list[EmissionCommand] = []
        while [p for p in partitions if await consumer.position(p) < end[p]]:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                found += [EmissionCommand.model_validate_json(record.value) for record in records if record.value]
        return found
    finally:
        await consumer.stop()


def emit_to_run_ms(commands: list[EmissionCommand], orders: list[dict[str, Any]],
                   daily: list[dict[str, Any]]) -> dict[str, float]:
    """Per consumer run: from the task's emit() of the partition that made it ready (the 24th hour, for the day)
    to Airflow's `queued_at` of the run the bridge created (one clock: everything runs on this machine)."""
    def at(value: str) -> datetime:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))

    by_key = {(c.asset.name, c.partition_key): c.emitted_at for c in commands}
    hours = [c.emitted_at for c in commands if c.asset.name == "airflow_demo.hourly_clicks"]
    found = {run["partition_key"]: (at(run["queued_at"]) - by_key[("airflow_demo.orders", run["partition_key"])])
             for run in orders}
    found.update({run["partition_key"]: at(run["queued_at"]) - max(hours) for run in daily})
    return {key: round(delta.total_seconds() * 1000) for key, delta in sorted(found.items())}


@pytest.mark.integration
@pytest.mark.airflow
@pytest.mark.timeout(600)
def test_the_airflow_guide_runs_as_written(airflow_guide_shell: Shell) -> None:
    steps = parse_guide(GUIDE)
    check_something_runs(GUIDE.read_text(encoding="utf-8"), steps)
    report = run_guide("docs/airflow.md", steps, airflow_guide_shell)
    report.announce(slowest=6)
    if report.failures:
        work = airflow_guide_shell.cwd / WORKDIR
        logs = sorted([*work.glob("*.log"), *work.glob("airflow/*.log")])
        tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
        pytest.fail(f"{report.summary()}\n{tails}", pytrace=False)
    # the guide's promise, read back from Airflow itself: one run per partition, each started by the bridge
    port = airflow_guide_shell.env["AIRFLOW_PORT"]
    orders = airflow_runs(airflow_guide_shell.cwd, port, "orders_by_partition")
    assert sorted(r["partition_key"] for r in orders) == ["batch-0", "batch-1", "batch-2"], orders
    daily = airflow_runs(airflow_guide_shell.cwd, port, "daily_clicks_report")
    assert [r["partition_key"] for r in daily] == ["2026-10-01"], daily
    for run in [*orders, *daily]:
        assert run["dag_run_id"].startswith("assetbus__") and run["state"] == "success", run
    assert daily[0]["conf"]["assetbus"]["partition_key"] == "2026-10-01"
    assert len(daily[0]["conf"]["assetbus"]["event_ids"]) == 24
    env = airflow_guide_shell.env
    commands = asyncio.run(emitted(env["KAFKA_BOOTSTRAP_SERVERS"], env["ASSETBUS_TOPIC_PREFIX"]))
    latency = emit_to_run_ms(commands, orders, daily)
    print("a task's emit() → the bridge's Airflow run created (ms):", json.dumps(latency))
