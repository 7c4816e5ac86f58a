"""What the database says about itself: server version, clock, applied migration, active DAGs, synchronous standbys."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    synchronous_standby_names: str = ""
    """Empty when commits wait for no standby."""
    standbys: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    """`pg_stat_replication`'s (application_name, state, sync_state) of each connected standby; state and
    sync_state are None for a role without `pg_read_all_stats` (`pg_monitor`)."""

    def synchronous_standbys(self) -> list[tuple[str, str, str]]:
        """The streaming standbys a commit waits for (sync_state `sync` or `quorum`)."""
        return [(name, state, sync) for name, state, sync in self.standbys
                if state == "streaming" and sync in ("sync", "quorum")]


async def database_status(conn: AsyncConnection) -> DatabaseStatus:
    version, now, has_alembic, has_dags, names = (await conn.execute(text(
        "SELECT current_setting('server_version'), clock_timestamp(), to_regclass('alembic_version') IS NOT NULL, "
        "to_regclass('consumer_dags') IS NOT NULL, current_setting('synchronous_standby_names')"))).one()
    revisions = list((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars()) \
        if has_alembic else []
    dags = list((await conn.execute(text("SELECT dag_id FROM consumer_dags WHERE active ORDER BY dag_id"))).scalars()) \
        if has_dags else []
    standbys = [(str(name or ""), state, sync) for name, state, sync in await conn.execute(
        text("SELECT application_name, state, sync_state FROM pg_stat_replication ORDER BY application_name"))]
    return DatabaseStatus(str(version), now, sorted(revisions), dags, str(names).strip(), standbys)
