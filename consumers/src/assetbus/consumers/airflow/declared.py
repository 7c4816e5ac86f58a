"""Consumer DAGs declared once, in Airflow (docs/airflow.md, of that name): the readiness rules of the DAGs
Airflow tags `assetbus`, registered by the provider's cluster policy or read from Airflow's metadata database,
kept in step. Rules written from Airflow have `fileloc` `airflow:<dag_id>`.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import zlib
from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.sync import AirflowSyncReport, apply_airflow_assets, read_airflow_assets
from assetbus.consumers.airflow.timetables import Translation, translate_timetable
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.storage import assets_by_name
from assetbus.consumers.storage.dags import SyncChange, deactivate_dags, get_dag, list_dags, upsert_dag
from assetbus.consumers.storage.urls import asyncpg_dsn

AIRFLOW_TAG = "assetbus"
FILELOC_PREFIX = "airflow:"
NOT_REGISTERED = ("no readiness rule registered for it: the assetbus cluster policy registers one when Airflow's "
                  "dag-processor parses the DAG (assetbus-sdk[airflow] installed there, its assetbus connection "
                  "reaching the assetbus API; the dag-processor's log of the DAG file says why not), or give "
                  "Airflow's metadata database (--airflow-metadata-url)")
"""Why a tagged DAG has no rule when no registration and no metadata database gave one."""

Transaction = Callable[[], AbstractAsyncContextManager[AsyncConnection]]
"""Opens one database transaction (the bridge's engine, the CLI's `connect`)."""


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


async def read_tagged_dags(airflow: AirflowClient) -> dict[str, str]:
    """Every live Airflow DAG tagged `assetbus`, with its description (Airflow's public REST API only)."""
    listed = await airflow.pages("/dags", "dags", params={"tags": [AIRFLOW_TAG], "exclude_stale": True})
    return {d["dag_id"]: d.get("description") or "" for d in listed if not d.get("is_stale")
            and AIRFLOW_TAG in {t.get("name") for t in d.get("tags", [])}}


async def registered_translations(conn: AsyncConnection, tagged: Collection[str]) -> list[Translation]:
    """The rules registered for the tagged DAGs (by the cluster policy, or written from Airflow before, active
    or not); a tagged DAG without one is reported as NOT_REGISTERED."""
    found = []
    for dag_id in sorted(tagged):
        row = await get_dag(conn, dag_id)
        if row is None or row.fileloc != FILELOC_PREFIX + dag_id:
            found.append(Translation(dag_id, None, NOT_REGISTERED))
        else:
            found.append(Translation(dag_id, ConsumerDag.from_definition(row.definition)))
    return found


async def sync_from_airflow(airflow: AirflowClient, transaction: Transaction, *, dag_ids: Collection[str] | None = None,
                            metadata_url: str | None = None) -> tuple[AirflowSyncReport, DeclaredReport]:
    """Airflow's assets and task registrations (of `dag_ids` only, if given), then the rules of the DAGs tagged
    `assetbus`; reads Airflow first, then writes in one transaction."""
    assets = await read_airflow_assets(airflow, dag_ids)
    tagged = await read_tagged_dags(airflow)
    timetables = await read_serialized_timetables(metadata_url, tagged) if metadata_url else None
    async with transaction() as conn:
        synced = await apply_airflow_assets(conn, assets)
        if timetables is None:
            declared = await registered_translations(conn, tagged)
        else:
            declared = [translate_timetable(dag_id, timetables.get(dag_id), description=tagged[dag_id])
                        for dag_id in sorted(tagged)]
        return synced, await apply_declared_dags(conn, declared)


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

