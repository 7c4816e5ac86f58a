"""The redrive log: which dead letters an operator re-published, when, by whom, and where to.

The unique key (source topic, partition, offset) is what makes a redrive happen at most once:
`claim_redrive` inserts the row in the caller's transaction before the record is published and
returns None when the dead letter was redriven already.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Identity, Integer, Table, Text, UniqueConstraint, func, text
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import metadata

dlq_redrives = Table(
    "dlq_redrives",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("dlq_topic", Text, nullable=False),
    Column("dlq_partition", Integer, nullable=False),
    Column("dlq_offset", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    Column("target_topic", Text, nullable=False),
    Column("target_partition", Integer),
    Column("target_offset", BigInteger),
    Column("value_sha256", Text, nullable=False),
    Column("value_replaced", Text, nullable=False),
    Column("operator", Text, nullable=False),
    Column("note", Text, nullable=False, server_default=""),
    Column("redriven_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("dlq_topic", "dlq_partition", "dlq_offset"),
)
"""`value_replaced` is `original` or `replaced` (the operator supplied a fixed value)."""


@dataclass(frozen=True, slots=True)
class RedriveRow:
    id: int
    dlq_topic: str
    dlq_partition: int
    dlq_offset: int
    reason: str
    target_topic: str
    target_partition: int | None
    target_offset: int | None
    value_sha256: str
    value_replaced: str
    operator: str
    note: str
    redriven_at: datetime


async def claim_redrive(conn: AsyncConnection, *, dlq_topic: str, dlq_partition: int, dlq_offset: int, reason: str,
                        target_topic: str, value_sha256: str, replaced: bool, operator: str,
                        note: str) -> int | None:
    """Record the redrive about to happen; its id, or None when this dead letter was redriven before."""
    found = await conn.execute(text(
        "INSERT INTO dlq_redrives (dlq_topic, dlq_partition, dlq_offset, reason, target_topic, value_sha256, "
        "value_replaced, operator, note) VALUES (:t, :p, :o, :r, :target, :sha, :replaced, :operator, :note) "
        "ON CONFLICT (dlq_topic, dlq_partition, dlq_offset) DO NOTHING RETURNING id"),
        {"t": dlq_topic, "p": dlq_partition, "o": dlq_offset, "r": reason, "target": target_topic, "sha": value_sha256,
         "replaced": "replaced" if replaced else "original", "operator": operator, "note": note})
    return found.scalar_one_or_none()


async def complete_redrive(conn: AsyncConnection, redrive_id: int, target_partition: int, target_offset: int) -> None:
    """Where the broker put the re-published record."""
    await conn.execute(text("UPDATE dlq_redrives SET target_partition = :p, target_offset = :o WHERE id = :id"),
                       {"p": target_partition, "o": target_offset, "id": redrive_id})


async def list_redrives(conn: AsyncConnection, dlq_topic: str) -> dict[tuple[int, int], RedriveRow]:
    """Every redrive from `dlq_topic`, by (partition, offset)."""
    rows = await conn.execute(dlq_redrives.select().where(dlq_redrives.c.dlq_topic == dlq_topic)  # the fields' order
                              .order_by(dlq_redrives.c.id))
    return {(row.dlq_partition, row.dlq_offset): RedriveRow(*row) for row in rows}
