"""Consumer DAGs declared once, in Airflow: readiness rules read from Airflow's DAGs and kept in step.

A DAG that Airflow tags `assetbus` is assetbus-driven: the bridge starts its runs. Its readiness rule is
its own `PartitionedAssetTimetable`, translated by `timetables.translate_timetable`.

What Airflow 3.3.2's public REST API exposes of a DAG's schedule (`GET /api/v2/dags`, `/dags/{id}/details`)
is `timetable_summary` ("Partitioned Asset"), `timetable_partitioned`, `timetable_description` and
`asset_expression`; it has no partition mapper (`partition_mapper_config`, `default_partition_mapper`).
Those exist only in the serialized DAG, which no public route returns. So the DAG list and tags come
from the REST API, and the timetable from the `serialized_dag` table of Airflow's metadata database,
read-only (`airflow_metadata_url`: `sqlite:///...` or `postgresql://...`).

Rules written from Airflow have `fileloc` `airflow:<dag_id>`; one whose DAG lost the tag, went stale or
lost its rule is deactivated (never deleted).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import zlib
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.timetables import Translation, translate_timetable
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.storage import assets_by_name
from assetbus.consumers.storage.dags import SyncChange, deactivate_dags, list_dags, upsert_dag
from assetbus.consumers.storage.urls import asyncpg_dsn

AIRFLOW_TAG = "assetbus"
"""The Airflow DAG tag that makes a DAG assetbus-driven (its runs are started by the bridge)."""
FILELOC_PREFIX = "airflow:"
"""`consumer_dags.fileloc` of a rule read from an Airflow DAG."""


@dataclass
class DeclaredReport:
    changes: dict[str, SyncChange] = field(default_factory=dict)
    """DAG id → what the sync did to its rule."""
    without_rule: dict[str, str] = field(default_factory=dict)
    """Assetbus-driven DAG id → why it has no readiness rule (unsupported mappers named)."""
    deactivated: list[str] = field(default_factory=list)

    @property
    def active(self) -> list[str]:
        return sorted(self.changes)


def _decode(data: Any, compressed: bytes | None) -> dict[str, Any]:
    if data is None and compressed is not None:
        data = zlib.decompress(compressed)
    if isinstance(data, bytes | str):
        data = json.loads(data)
    return data if isinstance(data, dict) else {}


def _read_sqlite(path: str, dag_ids: list[str]) -> list[tuple[str, Any, bytes | None]]:
    marks = ",".join("?" * len(dag_ids))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
        return db.execute(f"SELECT dag_id, data, data_compressed FROM serialized_dag WHERE dag_id IN ({marks}) "
                          "ORDER BY last_updated", dag_ids).fetchall()


async def read_serialized_timetables(metadata_url: str, dag_ids: Collection[str]) -> dict[str, dict[str, Any]]:
    """The newest serialized timetable of each DAG, from Airflow's metadata database (read-only)."""
    ids = sorted(dag_ids)
    if not ids:
        return {}
    scheme = urlsplit(metadata_url).scheme.split("+")[0]
    if scheme == "sqlite":
        rows = await asyncio.to_thread(_read_sqlite, metadata_url.split(":///", 1)[1], ids)
    elif scheme in ("postgresql", "postgres"):
        conn = await asyncpg.connect(asyncpg_dsn(metadata_url))
        try:
            rows = [tuple(r) for r in await conn.fetch(
                "SELECT dag_id, data::text, data_compressed FROM serialized_dag WHERE dag_id = ANY($1) "
                "ORDER BY last_updated", ids)]
        finally:
            await conn.close()
    else:
        raise ValueError(f"unsupported Airflow metadata database {scheme!r} (sqlite or postgresql)")
    found: dict[str, dict[str, Any]] = {}
    for dag_id, data, compressed in rows:  # ordered oldest first: the newest version wins
        found[str(dag_id)] = _decode(data, compressed).get("dag", {}).get("timetable") or {}
    return found


async def read_declared_dags(airflow: AirflowClient, metadata_url: str) -> list[Translation]:
    """Every live Airflow DAG tagged `assetbus`, with the rule its timetable translates to (or why none)."""
    listed = await airflow.pages("/dags", "dags", params={"tags": [AIRFLOW_TAG], "exclude_stale": True})
    dags = {d["dag_id"]: d for d in listed if not d.get("is_stale")
            and AIRFLOW_TAG in {t.get("name") for t in d.get("tags", [])}}
    timetables = await read_serialized_timetables(metadata_url, dags)
    return [translate_timetable(dag_id, timetables.get(dag_id), description=dags[dag_id].get("description") or "")
            for dag_id in sorted(dags)]


async def apply_declared_dags(conn: AsyncConnection, found: list[Translation]) -> DeclaredReport:
    """Write the translated rules (call after the asset sync, in one transaction)."""
    report = DeclaredReport()
    waited = {a for t in found if t.dag is not None for a in t.dag.assets}
    registered = await assets_by_name(conn, waited)
    for item in found:
        if item.dag is None:
            report.without_rule[item.dag_id] = item.problem or "no readiness rule"
            continue
        missing = [a for a in item.dag.assets if a not in registered or not registered[a].active]
        if missing:
            report.without_rule[item.dag_id] = f"waits for asset(s) unknown to assetbus: {', '.join(missing)}"
            continue
        report.changes[item.dag_id] = await upsert_dag(
            conn, item.dag_id, FILELOC_PREFIX + item.dag_id, json.dumps(item.dag.definition()),
            item.dag.fingerprint(), item.dag.coalesce)
    gone = [row.dag_id for row in await list_dags(conn, active_only=True)
            if row.fileloc.startswith(FILELOC_PREFIX) and row.dag_id not in report.changes]
    report.deactivated = await deactivate_dags(conn, gone)
    return report


async def bridge_served_assets(conn: AsyncConnection) -> dict[str, list[str]]:
    """The assets that the active rules written from Airflow (the DAGs the bridge serves) wait on, each with
    those DAGs."""
    served: dict[str, list[str]] = {}
    for row in await list_dags(conn, active_only=True):
        if row.fileloc.startswith(FILELOC_PREFIX):
            for name in ConsumerDag.from_definition(row.definition).assets:
                served.setdefault(name, []).append(row.dag_id)
    return served


async def airflow_driven_dags(conn: AsyncConnection) -> list[str]:
    """The active rules written from Airflow: the DAGs the bridge serves when no `--dag` is given."""
    return [row.dag_id for row in await list_dags(conn, active_only=True) if row.fileloc.startswith(FILELOC_PREFIX)]
