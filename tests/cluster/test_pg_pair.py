"""The local primary + synchronous standby: made in seconds, idempotent, the multi-host URL follows the writable node
through a promotion, nothing of it is left after `down()`."""

from __future__ import annotations

import asyncpg
from sqlalchemy import text

from assetbus.consumers.storage import create_engine
from assetbus.consumers.storage.urls import asyncpg_dsn
from tests.cluster.pg_pair import PgPair


async def served_by(url: str) -> int:
    """The port of the node a connection to `url` lands on."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        return int(await conn.fetchval("SELECT current_setting('port')"))
    finally:
        await conn.close()


async def test_the_pair_streams_in_sync_and_up_again_keeps_it(pg_pair: PgPair) -> None:
    replicas = pg_pair.replicas
    pids = replicas.primary.pid(), replicas.standby.pid()
    assert replicas.in_sync()
    assert replicas.sql(replicas.primary, "SHOW synchronous_commit") == "on"
    replicas.up()
    assert (replicas.primary.pid(), replicas.standby.pid()) == pids


async def test_the_multi_host_url_reaches_the_primary_then_the_promoted_standby(pg_pair: PgPair) -> None:
    replicas = pg_pair.replicas
    assert await served_by(pg_pair.url) == replicas.primary_port
    engine = create_engine(pg_pair.url)
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT current_setting('port')::int"))).scalar_one() == \
                replicas.primary_port
        replicas.crash_primary()
        replicas.promote()
        assert not replicas.primary.running()
        assert await served_by(pg_pair.url) == replicas.standby_port
        async with engine.begin() as conn:  # the pool heals onto the new primary, which commits without a standby
            await conn.execute(text("CREATE TABLE after_promotion (id int)"))
    finally:
        await engine.dispose()


def test_down_stops_both_nodes_and_removes_their_folder(pg_pair: PgPair) -> None:
    replicas = pg_pair.replicas
    replicas.down()
    assert not replicas.primary.running() and not replicas.standby.running()
    assert not replicas.root.exists()
