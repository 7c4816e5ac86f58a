"""What the database says about itself: server version, clock, applied migration, active DAGs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True, slots=True)
class DatabaseStatus:
    server_version: str
    now: datetime
    """The server's clock (`clock_timestamp()`, not the transaction's start)."""
    revisions: list[str]
    """Applied Alembic revisions (one, unless branches were merged); empty when never migrated."""
    active_dags: list[str]


async def database_status(conn: AsyncConnection) -> DatabaseStatus:
    version, now = (await conn.execute(text("SELECT current_setting('server_version'), clock_timestamp()"))).one()
    has_alembic = (await conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL"))).scalar_one()
    revisions = list((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars()) \
        if has_alembic else []
    has_dags = (await conn.execute(text("SELECT to_regclass('consumer_dags') IS NOT NULL"))).scalar_one()
    dags = list((await conn.execute(text("SELECT dag_id FROM consumer_dags WHERE active ORDER BY dag_id"))).scalars()) \
        if has_dags else []
    return DatabaseStatus(str(version), now, sorted(revisions), dags)
