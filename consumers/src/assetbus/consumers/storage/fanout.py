"""The scheduler's batch statements: three round trips per batch of asset events, whatever its size:
`lock_and_confirm`, then `read_targets` (a later statement, so it sees what other transactions committed
under those locks), then `write_fanout`. Each passes its rows as arrays (`unnest`), or as one JSON array of
rows, and returns one row of arrays. A consumed entry's `event` is JSON `null` (its run's `events` hold it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.queue import TARGET_LOCKS, NewQueueEntry, QueueRow, loaded_key, lock_key, stored_key
from assetbus.consumers.storage.runs import NewRun
from assetbus.schemas.codecs.text import IsoTimes, json_str

Target = tuple[str, str | None]

_LOCK_AND_CONFIRM = text("""
SELECT """ + TARGET_LOCKS + """ AS locked,
       ARRAY(SELECT k.id FROM unnest(CAST(:ids AS bigint[]), CAST(:commands AS uuid[])) AS k(id, command_id)
             WHERE (SELECT e.command_id FROM asset_events e WHERE e.id = k.id) = k.command_id) AS confirmed,
       (SELECT count(*) FROM consumer_dags) AS dags, (SELECT max(updated_at) FROM consumer_dags) AS dags_at
""")


async def lock_and_confirm(conn: AsyncConnection, targets: Iterable[Target], events: Sequence[tuple[int, UUID]],
                           ) -> tuple[set[int], tuple[int, datetime | None]]:
    """Lock the targets (transaction-scoped advisory locks, taken in one order); return the ids of `(event id,
    command id)` stored here, and the DAGs' version (the same value as `dags.dags_version`)."""
    keys = sorted({lock_key(dag, key) for dag, key in targets})
    row = (await conn.execute(_LOCK_AND_CONFIRM, {
        "keys": keys, "ids": [i for i, _ in events], "commands": [c for _, c in events]})).one()
    return set(row.confirmed), (int(row.dags), row.dags_at)


@dataclass
class TargetState:
    """What the database holds for a batch's targets, read in one statement."""

    known: set[tuple[str, int]] = field(default_factory=set)
    """(dag, event id) pairs queued before (pending or consumed) or recorded by their run: redeliveries."""
    pending: dict[Target, list[QueueRow]] = field(default_factory=dict)
    """The pending entries of the targets that have some, in arrival order."""
    generations: dict[Target, int] = field(default_factory=dict)
    """The latest run generation of the targets that have runs (absent: none yet, generation 0)."""


_READ = text("""
SELECT kn.dags AS known_dags, kn.events AS known_events,
       p.ids, p.dags, p.events, p.assets, p.keys, p.dates, p.slots, p.payloads,
       g.dags AS gen_dags, g.keys AS gen_keys, g.gens
FROM (SELECT array_agg(k.dag_id) AS dags, array_agg(k.event_id) AS events
      FROM unnest(CAST(:dag AS text[]), CAST(:event_id AS bigint[])) AS k(dag_id, event_id)
      WHERE (SELECT true FROM partition_queue q WHERE q.dag_id = k.dag_id AND q.event_id = k.event_id LIMIT 1)
         OR (SELECT true FROM consumer_runs r WHERE r.event_id = k.event_id AND r.dag_id = k.dag_id LIMIT 1)) AS kn,
     (SELECT array_agg(q.id ORDER BY q.id) AS ids, array_agg(q.dag_id ORDER BY q.id) AS dags,
             array_agg(q.event_id ORDER BY q.id) AS events, array_agg(q.asset_name ORDER BY q.id) AS assets,
             array_agg(q.target_key ORDER BY q.id) AS keys, array_agg(q.target_date ORDER BY q.id) AS dates,
             array_agg(q.slot ORDER BY q.id) AS slots, array_agg(q.event::text ORDER BY q.id) AS payloads
      FROM unnest(CAST(:tdag AS text[]), CAST(:tkey AS text[])) AS t(dag_id, target_key)
      CROSS JOIN LATERAL (SELECT * FROM partition_queue q WHERE q.dag_id = t.dag_id AND q.target_key = t.target_key
                          AND q.run_id IS NULL OFFSET 0) AS q) AS p,
     (SELECT array_agg(t.dag_id) AS dags, array_agg(t.partition_key) AS keys, array_agg(m.generation) AS gens
      FROM unnest(CAST(:tdag AS text[]), CAST(:tkey AS text[])) AS t(dag_id, partition_key)
      CROSS JOIN LATERAL (SELECT max(r.generation) AS generation FROM consumer_runs r
                          WHERE r.dag_id = t.dag_id AND r.partition_key = t.partition_key) AS m
      WHERE m.generation IS NOT NULL) AS g
""")
"""Every lookup is a correlated subquery (or a LATERAL one behind `OFFSET 0`), so that it runs as an index probe
per key whatever the planner believes of the tables' sizes: a table that grew faster than autovacuum analyzes
it (a replay, a backlog) would otherwise be scanned whole, once per batch, and a batch would cost as much as
the table holds (measured: 100 ms per batch of 200 at 60,000 runs)."""


async def read_targets(conn: AsyncConnection, pairs: Sequence[tuple[str, int]], targets: Iterable[Target],
                       ) -> TargetState:
    """Redeliveries among `pairs`, and the pending entries and latest generations of `targets`."""
    wanted = sorted({(dag, stored_key(key)) for dag, key in targets})
    state = TargetState()
    if not pairs and not wanted:
        return state
    row = (await conn.execute(_READ, {
        "dag": [d for d, _ in pairs], "event_id": [e for _, e in pairs],
        "tdag": [d for d, _ in wanted], "tkey": [k for _, k in wanted]})).one()
    if row.known_dags:
        state.known = set(zip(row.known_dags, row.known_events, strict=True))
    if row.ids:
        for row_id, dag, event_id, asset, key, when, slot, payload in zip(
                row.ids, row.dags, row.events, row.assets, row.keys, row.dates, row.slots, row.payloads, strict=True):
            queued = QueueRow(dag, event_id, asset, loaded_key(key), when, slot, payload, id=row_id)
            state.pending.setdefault((queued.dag_id, queued.target_key), []).append(queued)
    if row.gen_dags:
        for dag, key, generation in zip(row.gen_dags, row.gen_keys, row.gens, strict=True):
            state.generations[(dag, loaded_key(key))] = generation
    return state


_WRITE = text("""
WITH runs AS (
  INSERT INTO consumer_runs (run_id, dag_id, partition_key, partition_date, generation, events, origin, event_id)
  SELECT r->>0, r->>1, r->>2, CAST(r->>3 AS timestamptz), CAST(r->>4 AS int), r->5, r->>6, CAST(r->>7 AS bigint)
  FROM jsonb_array_elements(CAST(:runs AS jsonb)) AS r
  ON CONFLICT DO NOTHING
  RETURNING id, run_id, created_at
), unpublished AS (
  INSERT INTO unpublished_batches (run_ids) SELECT array_agg(id) FROM runs HAVING count(*) > 0
), entries AS (
  INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, target_date, slot, event, run_id)
  SELECT q->>0, CAST(q->>1 AS bigint), q->>2, q->>3, CAST(q->>4 AS timestamptz), q->>5, q->6, q->>7
  FROM jsonb_array_elements(CAST(:entries AS jsonb)) AS q
  ON CONFLICT (dag_id, event_id) DO NOTHING
  RETURNING 1
), consumed AS (
  UPDATE partition_queue q SET run_id = a.run_id, event = 'null'
  FROM unnest(CAST(:c_ids AS bigint[]), CAST(:c_runs AS text[])) AS a(id, run_id) WHERE q.id = a.id
  RETURNING 1
)
SELECT (SELECT array_agg(id ORDER BY id) FROM runs) AS ids,
       (SELECT array_agg(run_id ORDER BY id) FROM runs) AS run_ids,
       (SELECT min(created_at) FROM runs) AS created_at,
       (SELECT count(*) FROM entries) AS queued, (SELECT count(*) FROM consumed) AS consumed
""")
"""Runs and entries go as one JSON array of rows each (one parameter, no per-element array encoding in
the driver; the stored events are spliced in as the JSON text they already are)."""


@dataclass(frozen=True, slots=True)
class Written:
    run_ids: dict[str, int]
    """run id → row id, for the runs created (a clash on (dag, partition, generation), or on (dag, event),
    creates none)."""
    created_at: datetime | None
    queued: int


async def write_fanout(conn: AsyncConnection, runs: Sequence[NewRun], entries: Sequence[NewQueueEntry],
                       consumed: Sequence[tuple[int, str]]) -> Written:
    """Insert runs and queue entries, mark older entries (by row id) consumed by a run: one statement."""
    if not runs and not entries and not consumed:
        return Written({}, None, 0)
    times = IsoTimes()
    row = (await conn.execute(_WRITE, {
        "runs": "[" + ",".join(_run_row(r, times) for r in runs) + "]",
        "entries": "[" + ",".join(_entry_row(e, times) for e in entries) + "]",
        "c_ids": [i for i, _ in consumed], "c_runs": [r for _, r in consumed]})).one()
    return Written(dict(zip(row.run_ids or (), row.ids or (), strict=True)), row.created_at, int(row.queued))


def _run_row(run: NewRun, times: IsoTimes) -> str:
    events = run.events_json or json.dumps(run.events, separators=(",", ":"))
    return (f"[{json_str(run.run_id)},{json_str(run.dag_id)},"
            f"{json_str(stored_key(run.partition_key))},{_json_time(times.iso(run.partition_date))},{run.generation},"
            f"{events},{json_str(run.origin)},{'null' if run.event_id is None else run.event_id}]")


def _entry_row(entry: NewQueueEntry, times: IsoTimes) -> str:
    return (f"[{json_str(entry.dag_id)},{entry.event_id},{json_str(entry.asset_name)},"
            f"{json_str(stored_key(entry.target_key))},{_json_time(times.iso(entry.target_date))},"
            f"{json_str(entry.slot)},{entry.event if entry.run_id is None else 'null'},{json_str(entry.run_id)}]")


def _json_time(iso: str | None) -> str:
    """An ISO 8601 time with its offset as a JSON string, as PostgreSQL reads it into a timestamptz (or null).
    Formatted once per timestamp object of the write (`IsoTimes`): an event's partition date is also its
    per-event run's and its entries' target date, and a day's start the target date of its hours' entries."""
    return "null" if iso is None else f'"{iso}"'
