"""`assetbus bench pg-ceiling`: PostgreSQL's own rate for the persister's write (docs/benchmarks.md).

The rows are built before the clock starts: what is timed is the database (and asyncpg's encoding of the arrays).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.benchmarks.persister import BenchOptions
from assetbus.benchmarks.scratch import migrated_database
from assetbus.infra.databases import drop_database
from assetbus.settings import Settings

__all__ = ["CeilingOptions", "CeilingReport", "run_pg_ceiling"]

_PERSISTER = BenchOptions()

_INSERT = """
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key, partition_date,
                          source_kind, dag_id, run_id, task_id, map_index, try_number)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::uuid[], $5::jsonb[], $6::text[], $7::timestamptz[],
                     $8::text[], $9::text[], $10::text[], $11::text[], $12::int[], $13::int[])
ON CONFLICT (asset_id, dedupe_scope, dedupe_key) DO NOTHING
RETURNING id
"""


@dataclass(frozen=True)
class CeilingOptions:
    rows: int = 100_000
    chunk_size: int = _PERSISTER.chunk_size
    in_flight: int = _PERSISTER.transactions_in_flight
    extra_bytes: int = _PERSISTER.size
    assets: int = _PERSISTER.assets


@dataclass
class CeilingReport:
    options: CeilingOptions
    inserted: int
    seconds: float
    database: str = ""
    """The scratch database it ran in (dropped afterwards)."""

    @property
    def rows_per_s(self) -> float:
        return self.inserted / self.seconds if self.seconds > 0 else 0.0

    def figures(self) -> dict[str, float]:
        return {"pg_ceiling_rows_per_s": self.rows_per_s}


Chunk = tuple[list[Any], ...]


def _chunks(options: CeilingOptions, asset_ids: list[int], tag: str) -> list[Chunk]:
    """The rows, as the statement's 13 columns, one tuple per chunk (built before the clock starts)."""
    padding = "x" * max(0, options.extra_bytes - 60)
    when = datetime(2026, 10, 1, tzinfo=UTC)
    chunks: list[Chunk] = []
    for start in range(0, options.rows, options.chunk_size):
        n = min(options.chunk_size, options.rows - start)
        numbers = range(start, start + n)
        run_id = f"run-{tag}-{start // options.chunk_size}"
        chunks.append((
            [asset_ids[i % len(asset_ids)] for i in numbers],
            [f"bench_dag/{run_id}/load/-1"] * n,
            [f"batch-{i}" for i in numbers],
            [uuid.uuid4() for _ in numbers],
            [json.dumps({"row": i, "file": f"s3://bench/{i}.parquet", "pad": padding}) for i in numbers],
            [f"batch-{i}" for i in numbers],
            [when] * n,
            ["task"] * n, ["bench_dag"] * n, [run_id] * n, ["load"] * n, [-1] * n, [1] * n,
        ))
    return chunks


async def run_pg_ceiling(settings: Settings, options: CeilingOptions,
                         progress: Callable[[str], None] = lambda _: None) -> CeilingReport:
    tag = uuid.uuid4().hex[:10]
    db_name = f"assetbus_bench_{tag}"
    db_url = await migrated_database(settings.database_url, db_name)
    try:
        progress(f"  {options.rows:,} rows of {options.extra_bytes:,} B extra, {options.chunk_size:,} per "
                 f"transaction, {options.in_flight} in flight")
        dsn = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)
        connections = [await asyncpg.connect(dsn) for _ in range(options.in_flight)]
        try:
            asset_ids = [int(await connections[0].fetchval(
                "INSERT INTO assets (name, uri) VALUES ($1, $2) RETURNING id", f"bench.asset-{i:02d}",
                f"s3://bench/asset-{i:02d}/")) for i in range(options.assets)]
            queue: asyncio.Queue[Chunk] = asyncio.Queue()
            for chunk in _chunks(options, asset_ids, tag):
                queue.put_nowait(chunk)
            inserted = 0

            async def writer(conn: asyncpg.Connection) -> None:
                nonlocal inserted
                statement = await conn.prepare(_INSERT)
                while not queue.empty():
                    chunk = queue.get_nowait()
                    async with conn.transaction():
                        returned = await statement.fetch(*chunk)
                    inserted += len(returned)

            started = time.perf_counter()
            await asyncio.gather(*(writer(conn) for conn in connections))
            seconds = time.perf_counter() - started
            if inserted != options.rows:
                raise RuntimeError(f"{inserted} rows inserted for {options.rows}")
            return CeilingReport(options, inserted, seconds, db_name)
        finally:
            for conn in connections:
                await conn.close()
    finally:
        await drop_database(settings.database_url, db_name)
