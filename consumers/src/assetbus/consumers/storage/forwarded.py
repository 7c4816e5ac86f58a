"""The Airflow forwarder's ledger: one row per stored event it forwards to Airflow (migrations 0011, 0014), an
*intent* until Airflow answers (then `posted`, with Airflow's event id, or `refused`: a 4xx), leased to one
forwarder at a time (`lease_owner` until `lease_until`); how that makes each post happen once is
`airflow.forwarder`'s module docstring.
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
    Column("lease_owner", Text),
    Column("lease_until", DateTime(timezone=True)),
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


async def take_lease(conn: AsyncConnection, event_id: int, owner: str, lease_s: float) -> LedgerEntry | None:
    """Lease the intent of `event_id` to `owner` for `lease_s` seconds (taken, or renewed if `owner` holds it);
    the entry, or a finished one (posted, refused) as it is, with no lease taken. None: another owner's lease
    has not run out."""
    leased = (await conn.execute(text(
        "UPDATE airflow_forwarded SET lease_owner = :o, "
        "lease_until = now() + CAST(:s AS double precision) * interval '1 second' "
        "WHERE event_id = :e AND state = 'intent' "
        "AND (lease_owner IS NULL OR lease_owner = :o OR lease_until < now()) "
        "RETURNING event_id, state, created_at"), {"e": event_id, "o": owner, "s": lease_s})).first()
    if leased is not None:
        return LedgerEntry(*leased)
    row = (await conn.execute(text("SELECT event_id, state, created_at FROM airflow_forwarded WHERE event_id = :e"),
                              {"e": event_id})).one()
    return LedgerEntry(*row) if row.state != INTENT else None


async def finish_entry(conn: AsyncConnection, event_id: int, state: str, airflow_event_id: int | None = None,
                       detail: str | None = None) -> None:
    """Record the end of an intent: `posted` (with Airflow's event id) or `refused` (with why); its lease ends."""
    await conn.execute(text(
        "UPDATE airflow_forwarded SET state = :s, airflow_event_id = :a, detail = :d, finished_at = now(), "
        "lease_owner = NULL, lease_until = NULL WHERE event_id = :e AND state = 'intent'"),
        {"e": event_id, "s": state, "a": airflow_event_id, "d": detail})


async def note_attempt(conn: AsyncConnection, event_id: int, detail: str) -> None:
    """Count a failed attempt (the entry stays an intent, its lease ends) and say why."""
    await conn.execute(text("UPDATE airflow_forwarded SET attempts = attempts + 1, detail = :d, lease_owner = NULL, "
                            "lease_until = NULL WHERE event_id = :e AND state = 'intent'"),
                       {"e": event_id, "d": detail[:1000]})


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


async def posted_by_asset(conn: AsyncConnection, since: datetime) -> dict[str, int]:
    """Events posted to Airflow since `since`, counted by assetbus asset name."""
    rows = await conn.execute(text(
        "SELECT a.name, count(*) AS posted FROM airflow_forwarded f JOIN asset_events e ON e.id = f.event_id "
        "JOIN assets a ON a.id = e.asset_id WHERE f.state = :posted AND f.finished_at >= :since GROUP BY a.name"),
        {"posted": POSTED, "since": since})
    return {row.name: int(row.posted) for row in rows}
