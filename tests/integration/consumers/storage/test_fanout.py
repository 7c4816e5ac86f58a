"""The scheduler's batch statements: what one read returns for a batch's targets, and one write that
creates runs, queues entries and consumes older ones together."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.storage.fanout import _LOCK_AND_CONFIRM, _READ, lock_and_confirm, read_targets, write_fanout
from assetbus.consumers.storage.queue import NewQueueEntry
from assetbus.consumers.storage.runs import NewRun

_SEED = """
INSERT INTO assets (name, uri) VALUES ('orders', 's3://orders/');
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key, source_kind,
                          dag_id, run_id)
SELECT 1, 'scope', 'k' || n, gen_random_uuid(), '{}', 'p' || n, 'dag', 'ingest', 'r' FROM generate_series(1, 3) n;
INSERT INTO consumer_dags (dag_id, fileloc, definition, fingerprint, coalesce)
VALUES ('daily', '/dags/x.py', '{}', 'f', true);
"""


async def _seed(conn: AsyncConnection) -> None:
    raw = await conn.get_raw_connection()
    assert raw.driver_connection is not None
    await raw.driver_connection.execute(_SEED)


def _entry(event_id: int, key: str | None, run_id: str | None = None) -> NewQueueEntry:
    return NewQueueEntry("daily", event_id, "orders", key, None, f"s{event_id}", f'{{"event_id": {event_id}}}', run_id)


async def test_one_write_creates_the_run_queues_the_new_entry_and_consumes_the_older_ones(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await _seed(conn)
        await write_fanout(conn, [], [_entry(1, "day"), _entry(2, "day")], [])
    async with engine.begin() as conn:
        stored = await conn.execute(text("SELECT id, command_id FROM asset_events ORDER BY id"))
        ids = [(row.id, row.command_id) for row in stored]
        confirmed, version = await lock_and_confirm(conn, [("daily", "day")], [*ids, (99, uuid.uuid4())])
        state = await read_targets(conn, [("daily", 1), ("daily", 3)], [("daily", "day"), ("daily", None)])
        assert confirmed == {1, 2, 3} and version[0] == 1
        assert state.known == {("daily", 1)}
        assert [row.event_id for row in state.pending[("daily", "day")]] == [1, 2]
        assert ("daily", "day") not in state.generations and ("daily", None) not in state.pending

        run = NewRun(str(uuid.uuid4()), "daily", "day", None, 1, [{"event_id": 1}], "scheduler", "[]")
        older = [(row.id, run.run_id) for row in state.pending[("daily", "day")]]
        written = await write_fanout(conn, [run], [_entry(3, "day", run.run_id)], older)
        assert set(written.run_ids) == {run.run_id} and written.queued == 1 and written.created_at is not None

    async with engine.connect() as conn:
        after = await read_targets(conn, [], [("daily", "day")])
        consumed = (await conn.execute(text("SELECT count(*) FROM partition_queue WHERE run_id = :r"),
                                       {"r": run.run_id})).scalar_one()
    assert ("daily", "day") not in after.pending and after.generations[("daily", "day")] == 1
    assert consumed == 3


async def test_a_run_that_exists_already_is_not_created_again(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await _seed(conn)
        first = NewRun(str(uuid.uuid4()), "daily", "day", None, 1, [], "scheduler", "[]")
        await write_fanout(conn, [first], [], [])
        clash = NewRun(str(uuid.uuid4()), "daily", "day", None, 1, [], "scheduler", "[]")
        written = await write_fanout(conn, [clash], [], [])
    assert written.run_ids == {}


async def test_a_writes_runs_are_unpublished_together_and_leave_as_the_broker_takes_them(engine: AsyncEngine) -> None:
    """One `unpublished_batches` row per write; marking some of its runs keeps the rest unpublished."""
    from assetbus.consumers.storage.runs import mark_published, unpublished_runs

    async with engine.begin() as conn:
        await _seed(conn)
        runs = [NewRun(str(uuid.uuid4()), "daily", f"day{n}", None, 1, [], "scheduler", "[]") for n in range(3)]
        written = await write_fanout(conn, runs, [], [])
        ids = sorted(written.run_ids.values())
        assert (await conn.execute(text("SELECT count(*) FROM unpublished_batches"))).scalar_one() == 1
        await mark_published(conn, ids[:1])
        assert [run.id for run in await unpublished_runs(conn)] == ids[1:]
        await mark_published(conn, ids[1:])
        assert await unpublished_runs(conn) == []
        assert (await conn.execute(text("SELECT count(*) FROM unpublished_batches"))).scalar_one() == 0


_GROWN = """
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key, source_kind,
                          dag_id, run_id)
SELECT 1, 'grown', 'g' || n, gen_random_uuid(), '{}', 'g' || n, 'dag', 'ingest', 'r' FROM generate_series(1, 20000) n;
INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, origin, event_id)
SELECT 'run-' || n, 'daily', 'g' || n, 1, '[]', 'scheduler', n + 100 FROM generate_series(1, 20000) n;
INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, slot, event, run_id)
SELECT 'daily', n + 100, 'orders', 'g' || n, 's', 'null', 'run-' || n FROM generate_series(1, 20000) n;
"""


async def test_the_batch_reads_probe_indexes_however_much_the_tables_grew_since_they_were_analyzed(
        engine: AsyncEngine) -> None:
    """A replay or a backlog grows the tables faster than autovacuum analyzes them: planned as joins, the reads
    then scanned whole tables once per batch (a batch cost as much as the tables held)."""
    async with engine.begin() as conn:
        await _seed(conn)
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        await raw.execute("ANALYZE")
        await raw.execute(_GROWN)
        await raw.execute("SET LOCAL plan_cache_mode = force_generic_plan")  # as a statement cached per connection
        keys = [f"g{n}" for n in range(1, 201)]
        arguments = {"keys": [f"daily\x1f{k}" for k in keys], "ids": list(range(100, 300)),
                     "commands": [uuid.uuid4() for _ in range(200)], "dag": ["daily"] * 200,
                     "event_id": list(range(100, 300)), "tdag": ["daily"] * 200, "tkey": keys}
        for statement in (_LOCK_AND_CONFIRM, _READ):
            compiled = statement.compile(dialect=engine.dialect)
            names = compiled.positiontup or []
            plan = "\n".join(row[0] for row in await raw.fetch("EXPLAIN " + str(compiled),
                                                               *[arguments[name] for name in names]))
            for table in ("asset_events", "consumer_runs", "partition_queue"):
                assert f"Seq Scan on {table}" not in plan, plan
