"""A DATABASE_URL whose hosts are all read-only standbys: the persister waits for a node that takes writes, one
log line per attempt, then gives up with exit code 75 and one error line naming the hosts it tried; it writes
nothing."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from sqlalchemy import text

from assetbus.consumers.storage import create_engine
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.cluster.pg_pair import DATABASE, PASSWORD, USER, PgPair
from tests.cluster.pg_replica import multi_host_url

STARTUP_TIMEOUT_S = 4


async def test_a_url_of_standbys_only_waits_then_exits_75_naming_the_hosts(
        pg_pair: PgPair, infra: Settings, topics: Topics, token_secret: str) -> None:
    standby = f"127.0.0.1:{pg_pair.replicas.standby_port}"
    url = multi_host_url([pg_pair.replicas.standby_port], user=USER, password=PASSWORD, database=DATABASE)
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.kafka.bootstrap, "DATABASE_URL": url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "run", "persister", "--startup-timeout-s",
        str(STARTUP_TIMEOUT_S), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), STARTUP_TIMEOUT_S + 60)
    output = out.decode() + err.decode()

    assert process.returncode == 75, output
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    assert standby in errors[0] and "accepts writes" in errors[0], errors[0]
    attempts = [line for line in output.splitlines() if "waiting for a writable PostgreSQL" in line]
    assert len(attempts) >= 2 and all(standby in line for line in attempts), output

    for port in (pg_pair.replicas.standby_port, pg_pair.replicas.primary_port):
        engine = create_engine(pg_pair.node_url(port))
        try:
            async with engine.connect() as conn:
                assert (await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one() == 0
        finally:
            await engine.dispose()
    print(f"\n[standby-only url] exit 75 after {len(attempts)} attempt(s): {errors[0]}")
