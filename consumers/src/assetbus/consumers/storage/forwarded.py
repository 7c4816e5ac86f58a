"""The Airflow forwarder's ledger: one row per stored event it forwards to Airflow (migration 0011).

A row is written as an *intent* (`state = 'intent'`) and committed before the event is posted to
Airflow; it becomes `posted` with Airflow's event id once Airflow has answered. An intent that was
never confirmed (a forwarder killed mid-request, a lost answer) is resolved by searching Airflow
for the assetbus event id before posting again. `refused` rows are events Airflow answered 4xx to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, ForeignKey, Integer, Table, Text, func, text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import metadata

INTENT, POSTED, REFUSED = "intent", "posted", "refused"

airflow_forwarded = Table(
    "airflow_forwarded",
    metadata,
    Column("event_id", BigInteger, ForeignKey("asset_events.id"), primary_key=True),
    Column("airflow_asset_id", BigInteger, nullable=False),
    Column("state", Text, nullable=False, server_default=INTENT),
    Column("airflow_event_id", BigInteger),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("detail", Text),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("finished_at", DateTime(timezone=True)),
)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    event_id: int
    state: str
    created_at: datetime


async def claim_intent(conn: AsyncConnection, event_id: int, airflow_asset_id: int) -> bool:
    """Write the intent to post `event_id`; True if this call wrote it (False: a row was there already)."""
    inserted = await conn.execute(text(
        "INSERT INTO airflow_forwarded (event_id, airflow_asset_id) VALUES (:e, :a) "
        "ON CONFLICT (event_id) DO NOTHING RETURNING event_id"), {"e": event_id, "a": airflow_asset_id})
    return inserted.first() is not None


async def lock_entry(conn: AsyncConnection, event_id: int) -> LedgerEntry:
    """The entry of `event_id`, locked until the transaction ends (one forwarder at a time per event)."""
    row = (await conn.execute(text(
        "SELECT event_id, state, created_at FROM airflow_forwarded WHERE event_id = :e FOR UPDATE"),
        {"e": event_id})).one()
    return LedgerEntry(row.event_id, row.state, row.created_at)


async def finish_entry(conn: AsyncConnection, event_id: int, state: str, airflow_event_id: int | None = None,
                       detail: str | None = None) -> None:
    """Record the entry's end: `posted` (with Airflow's event id) or `refused` (with why)."""
    await conn.execute(text(
        "UPDATE airflow_forwarded SET state = :s, airflow_event_id = :a, detail = :d, finished_at = now() "
        "WHERE event_id = :e"), {"e": event_id, "s": state, "a": airflow_event_id, "d": detail})


async def note_attempt(conn: AsyncConnection, event_id: int, detail: str) -> None:
    """Count a failed attempt (the entry stays an intent) and say why."""
    await conn.execute(text("UPDATE airflow_forwarded SET attempts = attempts + 1, detail = :d "
                            "WHERE event_id = :e AND state = 'intent'"), {"e": event_id, "d": detail[:1000]})


@dataclass(frozen=True, slots=True)
class ForwarderStatus:
    posted: int
    refused: int
    open_intents: int
    oldest_intent: datetime | None
    last_posted: datetime | None


async def forwarder_status(conn: AsyncConnection) -> ForwarderStatus:
    """Counts of the ledger, for `assetbus doctor`."""
    row = (await conn.execute(text(
        "SELECT count(*) FILTER (WHERE state = 'posted') AS posted, "
        "count(*) FILTER (WHERE state = 'refused') AS refused, "
        "count(*) FILTER (WHERE state = 'intent') AS open_intents, "
        "min(created_at) FILTER (WHERE state = 'intent') AS oldest_intent, "
        "max(finished_at) FILTER (WHERE state = 'posted') AS last_posted FROM airflow_forwarded"))).one()
    return ForwarderStatus(int(row.posted), int(row.refused), int(row.open_intents), row.oldest_intent,
                           row.last_posted)
