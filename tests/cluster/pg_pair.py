"""The PostgreSQL pair of the failover tests: `ReplicaPair` (primary + synchronous standby), its role and database
migrated through the multi-host URL every service is given."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from assetbus.infra.ports import free_port
from assetbus.migrate import upgrade
from tests.cluster.pg_replica import ReplicaPair, multi_host_url

USER = PASSWORD = "assetbus"
DATABASE = "assetbus_ha"


@dataclass
class PgPair:
    """The running pair and its URLs: the libpq multi-host one (as a managed service hands it out), and one per node."""

    replicas: ReplicaPair
    url: str

    def node_url(self, port: int) -> str:
        return f"postgresql+asyncpg://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"


def _two_ports() -> tuple[int, int]:
    first = free_port()
    second = free_port()
    while second == first:
        second = free_port()
    return first, second


@contextlib.contextmanager
def started_pair() -> Iterator[PgPair]:
    primary, standby = _two_ports()
    root = Path(tempfile.mkdtemp(prefix="assetbus-pg-ha-"))
    replicas = ReplicaPair(primary, standby, root=root)
    try:
        replicas.up()
        replicas.create_database(USER, PASSWORD, DATABASE)
        url = multi_host_url([primary, standby], user=USER, password=PASSWORD, database=DATABASE)
        upgrade(url)
        yield PgPair(replicas, url)
    finally:
        replicas.down()
