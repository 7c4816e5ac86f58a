"""`bench pg-ceiling` inserts every row once, through the persister's statement shape, chunk size and
transactions in flight, into a scratch database it drops afterwards."""

from __future__ import annotations

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.benchmarks.pg_ceiling import CeilingOptions, run_pg_ceiling
from assetbus.consumers.persister import PersisterConfig
from assetbus.settings import Settings


async def _bench_databases(admin_url: str) -> set[str]:
    conn = await asyncpg.connect(make_url(admin_url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        return {row[0] for row in await conn.fetch("SELECT datname FROM pg_database WHERE datname LIKE "
                                                   "'assetbus_bench_%'")}
    finally:
        await conn.close()


async def test_the_ceiling_inserts_every_row_once_with_the_persisters_chunking(infra: Settings) -> None:
    defaults = CeilingOptions()
    fields = PersisterConfig.model_fields
    assert (defaults.chunk_size, defaults.in_flight) == (fields["chunk_size"].default,
                                                         fields["transactions_in_flight"].default)
    report = await run_pg_ceiling(infra, CeilingOptions(rows=2_500, chunk_size=400, in_flight=3))
    assert report.inserted == 2_500 and report.seconds > 0
    assert report.figures()["pg_ceiling_rows_per_s"] == report.rows_per_s > 0
    assert report.database.startswith("assetbus_bench_")
    assert report.database not in await _bench_databases(infra.database_url)  # its scratch database is gone
