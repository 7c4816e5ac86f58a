"""Revoked credentials: worker credentials (and any other token, by its `jti`) withdrawn one by one.

The Airflow minter checks the list on every request it answers for a worker credential, so a revoked
credential is refused at once (401 `credential_revoked`), without rotating the signing key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Column, DateTime, Table, Text, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import metadata

revoked_tokens = Table(
    "revoked_tokens", metadata,
    Column("jti", Text, primary_key=True),
    Column("subject", Text, nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    Column("revoked_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


@dataclass(frozen=True, slots=True)
class Revocation:
    jti: str
    subject: str
    reason: str
    revoked_at: datetime


async def revoke(conn: AsyncConnection, jti: str, subject: str, reason: str = "") -> bool:
    """Put the token `jti` on the list; True if it was not there yet (revoking twice is a no-op)."""
    stmt = (insert(revoked_tokens).values(jti=jti, subject=subject, reason=reason)
            .on_conflict_do_nothing().returning(revoked_tokens.c.jti))
    return (await conn.execute(stmt)).one_or_none() is not None


async def revocation(conn: AsyncConnection, jti: str) -> Revocation | None:
    """The revocation of `jti`, or None while it stands."""
    row = (await conn.execute(select(revoked_tokens).where(revoked_tokens.c.jti == jti))).one_or_none()
    return None if row is None else Revocation(row.jti, row.subject, row.reason, row.revoked_at)
