"""`assetbus airflow metadata-db`: a database for Airflow's metadata beside assetbus's own, on the real server."""

from __future__ import annotations

import asyncpg
from sqlalchemy.engine import make_url

from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.infra.databases import drop_database
from tests.integration.assetbus.cli.conftest import Ops


async def test_metadata_db_creates_its_database_once_and_prints_airflows_url(ops: Ops, db_url: str) -> None:
    expected = f"{make_url(db_url).database}_airflow"
    try:
        first = await ops("airflow", "metadata-db")
        assert first.exit_code == 0, first.output
        url = make_url(first.stdout.strip())
        assert (url.drivername, url.database) == ("postgresql+psycopg2", expected)
        assert f"created database {expected}" in first.stderr
        conn = await asyncpg.connect(asyncpg_dsn(url.set(drivername="postgresql").render_as_string(False)))
        await conn.execute("CREATE TABLE kept (id int)")  # Airflow's tables, say
        await conn.close()

        again = await ops("airflow", "metadata-db")
        assert again.exit_code == 0 and again.stdout == first.stdout
        assert "already there, kept as it is" in again.stderr
        conn = await asyncpg.connect(asyncpg_dsn(url.set(drivername="postgresql").render_as_string(False)))
        assert await conn.fetchval("SELECT count(*) FROM kept") == 0
        await conn.close()
    finally:
        await drop_database(db_url, expected)


async def test_metadata_db_refuses_a_name_it_would_have_to_quote(ops: Ops) -> None:
    result = await ops("airflow", "metadata-db", 'airflow"; DROP DATABASE assetbus; --')
    assert result.exit_code == 1
    assert "is not a database name this command creates" in result.stderr
