"""Consumer runs: created by the scheduler (or replay), published as readiness, claimed and finished
by the readiness subscriber SDK. At most one run per (dag, target partition, generation).

A claim is a **lease with a fencing token**: `claim_run` sets a run `running` for its holder, bumps
`attempts` (the fence) and sets `lease_until`; a second claim is refused while that lease is live,
and succeeds with a new fence once it has expired (the holder died, or stopped renewing). The holder
renews the lease while its handler runs (`renew_run`) and reports the outcome with its fence
(`finish_run`); both are refused once another claim has taken the run. Each is one conditional
UPDATE: two subscribers racing are ordered by the row lock, never by the code around it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.queue import loaded_key, stored_key
from assetbus.producers.readiness import RunStatus

_QUEUED = RunStatus.QUEUED.value
"""Read once: an enum member's `.value` is a descriptor call, per created run on the scheduler's path."""


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class NewRun:
    run_id: str
    dag_id: str
    partition_key: str | None
    partition_date: datetime | None
    generation: int
    events: list[dict[str, Any]]
    origin: str
    events_json: str | None = None
    """`events` serialized already (saves a second serialization), or None."""
    event_id: int | None = None
    """The one event of a run that was ready as soon as that event arrived: it has no queue row, the run
    is its record (unique per dag and event, as a queue row is). None: its events are queue rows."""


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class RunRow:
    id: int
    run_id: str
    dag_id: str
    partition_key: str | None
    partition_date: datetime | None
    generation: int
    events: list[dict[str, Any]]
    origin: str
    status: str
    published: bool
    attempts: int
    consumer: str | None
    detail: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    events_json: str | None = None
    """`events` as the JSON text stored, when at hand."""
    external_run_id: str | None = None
    """The run's id in the orchestrator that runs it (an Airflow dag_run_id), if one does."""
    external_state: str | None = None
    """The orchestrator's last reported state of that run (queued, running, success, failed)."""
    lease_until: datetime | None = None
    """When the holder's claim of a running run expires (None: not running, or claimed before leases)."""


@dataclass(frozen=True, slots=True)
class RunClaim:
    """What a claim found: the run after the statement, and whether this claim holds it now."""

    claimed: bool
    """True: the caller holds the run, with fence `run.attempts` until `run.lease_until`. False: the run
    has finished (`run.status`), or another holder's lease is live (`running`): not claimed."""
    run: RunRow


PUBLISHED = "NOT EXISTS (SELECT 1 FROM unpublished_batches u WHERE consumer_runs.id = ANY(u.run_ids))"
"""SQL: whether a `consumer_runs` row's signal is on the broker (its id is in no `unpublished_batches` row)."""

_COLUMNS = ("id, run_id, dag_id, partition_key, partition_date, generation, events::text AS events, origin, status, "
            f"{PUBLISHED} AS published, attempts, consumer, detail, created_at, started_at, finished_at, "
            "external_run_id, external_state, lease_until")


def _run(row: Any) -> RunRow:
    return RunRow(row.id, row.run_id, row.dag_id, loaded_key(row.partition_key), row.partition_date, row.generation,
                  json.loads(row.events), row.origin, row.status, row.published, row.attempts, row.consumer,
                  row.detail, row.created_at, row.started_at, row.finished_at, row.events,
                  external_run_id=row.external_run_id, external_state=row.external_state,
                  lease_until=row.lease_until)


def created_run(new: NewRun, row_id: int, created_at: datetime | None) -> RunRow:
    """The RunRow of a run just inserted (queued, unpublished), from what was inserted."""
    assert created_at is not None, "a created run has a creation time"
    return RunRow(row_id, new.run_id, new.dag_id, new.partition_key, new.partition_date, new.generation, new.events,
                  new.origin, _QUEUED, False, 0, None, None, created_at, None, None, new.events_json)


async def unpublished_runs(conn: AsyncConnection, limit: int = 1000) -> list[RunRow]:
    """Runs whose readiness signal has not been acknowledged by the broker yet, oldest first."""
    rows = await conn.execute(text(f"SELECT {_COLUMNS} FROM consumer_runs WHERE id IN "
                                   "(SELECT r FROM unpublished_batches, unnest(run_ids) AS r ORDER BY r LIMIT :limit) "
                                   "ORDER BY id"), {"limit": limit})
    return [_run(row) for row in rows]


_MARK = text("""
WITH touched AS (
  SELECT u.id, ARRAY(SELECT r FROM unnest(u.run_ids) AS r WHERE r <> ALL(CAST(:ids AS bigint[]))) AS rest
  FROM unpublished_batches u WHERE u.run_ids && CAST(:ids AS bigint[])
), done AS (
  DELETE FROM unpublished_batches u USING touched t WHERE u.id = t.id AND cardinality(t.rest) = 0
)
UPDATE unpublished_batches u SET run_ids = t.rest FROM touched t WHERE u.id = t.id AND cardinality(t.rest) > 0
""")


async def mark_published(conn: AsyncConnection, ids: Sequence[int]) -> None:
    """The broker has these runs' signals: they leave `unpublished_batches` (a row whose runs have all
    left is deleted; the publisher sends a batch's runs together, so that is the usual case)."""
    if ids:
        await conn.execute(_MARK, {"ids": list(ids)})


async def list_runs(conn: AsyncConnection, *, dag_id: str | None = None, status: str | None = None,
                    since: datetime | None = None, limit: int = 50, before_id: int | None = None) -> list[RunRow]:
    """Newest first; pass the last `id` of a page as `before_id` for the next one."""
    filters = {"dag_id = :dag": dag_id, "status = :status": status, "created_at >= :since": since,
               "id < :before_id": before_id}
    where = ["true", *(clause for clause, value in filters.items() if value is not None)]
    rows = await conn.execute(text(f"SELECT {_COLUMNS} FROM consumer_runs WHERE {' AND '.join(where)} "
                                   "ORDER BY id DESC LIMIT :limit"),
                              {"dag": dag_id, "status": status, "since": since, "limit": limit,
                               "before_id": before_id})
    return [_run(row) for row in rows]


async def get_run(conn: AsyncConnection, run_id: str) -> RunRow | None:
    row = (await conn.execute(text(f"SELECT {_COLUMNS} FROM consumer_runs WHERE run_id = :r"),
                              {"r": run_id})).one_or_none()
    return _run(row) if row is not None else None


async def targets_with_runs(conn: AsyncConnection, dag_id: str, keys: Iterable[str | None]) -> set[str | None]:
    """Which of these target partitions of a DAG already have a run (any generation)."""
    wanted = sorted({stored_key(k) for k in keys})
    if not wanted:
        return set()
    rows = await conn.execute(text(  # a probe per key, whatever the planner believes of the table's size
        "SELECT k FROM unnest(CAST(:keys AS text[])) AS k "
        "WHERE (SELECT true FROM consumer_runs r WHERE r.dag_id = :dag AND r.partition_key = k LIMIT 1)"),
                              {"dag": dag_id, "keys": wanted})
    return {loaded_key(key) for key in rows.scalars()}


_CLAIM = text(f"""
WITH claimed AS (
  UPDATE consumer_runs SET status = 'running', attempts = attempts + 1, consumer = :consumer,
                           started_at = now(), finished_at = NULL, detail = NULL,
                           lease_until = now() + make_interval(secs => :lease_s)
  WHERE run_id = :r AND (status = 'queued' OR (status = 'running' AND (lease_until IS NULL OR lease_until <= now())))
  RETURNING {_COLUMNS}
)
SELECT true AS claimed, * FROM claimed
UNION ALL
SELECT false AS claimed, {_COLUMNS} FROM consumer_runs WHERE run_id = :r AND NOT EXISTS (SELECT 1 FROM claimed)""")


async def claim_run(conn: AsyncConnection, run_id: str, consumer: str, lease_s: float) -> RunClaim | None:
    """Take the lease of a run for `consumer` for `lease_s` seconds (module docstring). None: an unknown run.

    A run claimed before leases (no `lease_until`) counts as expired. Not claimed, the answer shows the run as
    of the statement's snapshot: a holder that took it a moment ago may show as `queued`."""
    row = (await conn.execute(_CLAIM, {"r": run_id, "consumer": consumer, "lease_s": float(lease_s)})).one_or_none()
    return RunClaim(row.claimed, _run(row)) if row is not None else None


async def renew_run(conn: AsyncConnection, run_id: str, fence: int, lease_s: float) -> datetime | None:
    """Extend the lease of the holder of `fence` to `lease_s` seconds from now; its new expiry, or None if
    that fence no longer holds the run (another claim took it, or it finished): the holder lost it.

    A lease that expired without another claim is still the holder's (no one else has a fence), so its
    renewal succeeds: the fence, not the clock, decides who holds a run. `lease_s=0` ends the lease now
    (the run stays `running`; the next claim takes it at once)."""
    row = (await conn.execute(text(
        "UPDATE consumer_runs SET lease_until = now() + make_interval(secs => :lease_s) "
        "WHERE run_id = :r AND attempts = :fence AND status = 'running' RETURNING lease_until"),
        {"r": run_id, "fence": fence, "lease_s": float(lease_s)})).one_or_none()
    return row.lease_until if row is not None else None


async def finish_run(conn: AsyncConnection, run_id: str, status: RunStatus, detail: str | None = None,
                     *, fence: int | None) -> bool:
    """Record the outcome of a claimed run; False (nothing changed) unless it is running under `fence`
    (`fence=None`, for callers from before leases only: whichever claim holds it)."""
    rows = await conn.execute(text("UPDATE consumer_runs SET status = :status, detail = :detail, finished_at = now(), "
                                   "lease_until = NULL WHERE run_id = :r AND status = 'running' "
                                   "AND (CAST(:fence AS integer) IS NULL OR attempts = :fence) RETURNING id"),
                              {"r": run_id, "status": status.value, "detail": detail, "fence": fence})
    return rows.one_or_none() is not None


async def run_counts(conn: AsyncConnection, since: datetime | None = None) -> dict[str, dict[str, int]]:
    """dag_id → status → number of runs (created since `since`, if given)."""
    rows = await conn.execute(text("SELECT dag_id, status, count(*) AS n FROM consumer_runs "
                                   "WHERE (CAST(:since AS timestamptz) IS NULL OR created_at >= :since) "
                                   "GROUP BY dag_id, status"), {"since": since})
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(row.dag_id, {})[row.status] = row.n
    return counts


@dataclass(frozen=True, slots=True)
class WaitingIn:
    """An event queued for a DAG's target partition whose run has not been created yet."""

    dag_id: str
    target_key: str | None


@dataclass(frozen=True, slots=True)
class EventLineage:
    runs: list[RunRow]
    """Runs that consumed the event, oldest first."""
    waiting: list[WaitingIn]
    """DAG partitions where it is queued and still waits for the rest of their condition."""


async def event_lineage(conn: AsyncConnection, event_id: int) -> EventLineage:
    """The runs an event triggered and where it still waits (both empty: no DAG waits on its asset): its queue
    rows (`ix_partition_queue_event_id`), and the runs it made ready on its own (`uq_consumer_runs_event_id`)."""
    rows = list(await conn.execute(text("SELECT dag_id, target_key, run_id FROM partition_queue "
                                        "WHERE event_id = :event_id UNION ALL "
                                        "SELECT dag_id, partition_key, run_id FROM consumer_runs "
                                        "WHERE event_id = :event_id"), {"event_id": event_id}))
    runs: list[RunRow] = []
    if run_ids := sorted({row.run_id for row in rows if row.run_id is not None}):
        runs = [_run(run) for run in await conn.execute(text(
            f"SELECT {_COLUMNS} FROM consumer_runs WHERE run_id = ANY(CAST(:ids AS text[])) ORDER BY id"),
            {"ids": run_ids})]
    waiting = [WaitingIn(row.dag_id, loaded_key(row.target_key)) for row in rows if row.run_id is None]
    return EventLineage(runs, waiting)


@dataclass(frozen=True, slots=True)
class OpenExternalRun:
    """A run the orchestrator executes (an Airflow DAG run started by the bridge), its outcome still to come."""

    run_id: str
    dag_id: str
    external_run_id: str
    external_state: str | None
    started_at: datetime | None


async def record_external_run(conn: AsyncConnection, run_id: str, external_run_id: str, external_state: str,
                              consumer: str) -> bool:
    """Note the orchestrator's run of a claimed run; it stays `running` until its outcome comes back."""
    rows = await conn.execute(text(
        "UPDATE consumer_runs SET external_run_id = :ext, external_state = :state, consumer = :consumer, "
        "detail = NULL WHERE run_id = :r AND status NOT IN ('success', 'failed') RETURNING id"),
        {"r": run_id, "ext": external_run_id, "state": external_state, "consumer": consumer})
    return rows.one_or_none() is not None


async def open_external_runs(conn: AsyncConnection, dag_ids: Sequence[str], limit: int = 5000) -> list[OpenExternalRun]:
    """Runs of these DAGs started in the orchestrator whose outcome has not come back yet, oldest first."""
    if not dag_ids:
        return []
    rows = await conn.execute(text(
        "SELECT run_id, dag_id, external_run_id, external_state, started_at FROM consumer_runs "
        "WHERE external_run_id IS NOT NULL AND status = 'running' AND dag_id = ANY(CAST(:dags AS text[])) "
        "ORDER BY dag_id, id LIMIT :limit"), {"dags": list(dag_ids), "limit": limit})
    return [OpenExternalRun(*row) for row in rows]


async def update_external_state(conn: AsyncConnection, run_id: str, external_state: str,
                                outcome: RunStatus | None = None, detail: str | None = None) -> bool:
    """Record the orchestrator's state; with `outcome` (success/failed) the run is finished."""
    finished = ", status = :status, detail = :detail, finished_at = now()" if outcome is not None else ""
    rows = await conn.execute(text(f"UPDATE consumer_runs SET external_state = :state{finished} "
                                   "WHERE run_id = :r AND status = 'running' RETURNING id"),
                              {"r": run_id, "state": external_state, "status": outcome and outcome.value,
                               "detail": detail})
    return rows.one_or_none() is not None


async def note_run_problem(conn: AsyncConnection, run_id: str, detail: str) -> None:
    """Why the orchestrator's run could not be created yet (shown by `assetbus runs list`)."""
    await conn.execute(text("UPDATE consumer_runs SET detail = :detail WHERE run_id = :r AND status = 'running'"),
                       {"r": run_id, "detail": detail[:2000]})
