"""The scheduler's view of the active consumer DAGs, reloaded when a sync changes them."""

from __future__ import annotations

import logging
from datetime import datetime

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.planner import DagIndex
from assetbus.consumers.storage.dags import dags_version, list_dags

log = logging.getLogger("assetbus.scheduler")


class DagRegistry:
    """Holds a DagIndex; `refresh()` costs one small query when nothing changed."""

    def __init__(self) -> None:
        self.index = DagIndex([])
        self.version: tuple[int, datetime | None] | None = None
        """The definitions' version loaded (`dags_version`), None before the first `refresh()`."""

    async def refresh(self, conn: AsyncConnection) -> bool:
        """Reload the definitions if a sync changed them since the last call. True if it reloaded."""
        version = await dags_version(conn)
        if version == self.version:
            return False
        dags: list[ConsumerDag] = []
        for row in await list_dags(conn, active_only=True):
            try:
                dags.append(ConsumerDag.from_definition(row.definition))
            except ValidationError as error:  # written by another version, or edited by hand
                log.error("consumer DAG %s has an unreadable definition and is ignored: %s", row.dag_id,
                          error.errors()[0]["msg"])
        self.index = DagIndex(dags)
        self.version = version
        log.info("consumer DAGs loaded: %s", ", ".join(sorted(self.index.by_id)) or "none")
        return True
