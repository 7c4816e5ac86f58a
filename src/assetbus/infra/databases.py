"""Databases beside assetbus's own on its PostgreSQL server: Airflow's metadata database (`assetbus airflow
metadata-db` makes one for a reader's Airflow, docs/airflow.md; `LocalAirflow` one per test stack or benchmark) and
the benchmarks' scratch databases. The role of assetbus's `DATABASE_URL` needs CREATEDB (the local
infrastructure's has it).
"""

from __future__ import annotations

import re

import asyncpg
from sqlalchemy.engine import URL, make_url

from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.infra.errors import InfraError

__all__ = ["airflow_metadata_url", "create_database", "default_database_name", "drop_database", "ensure_database"]

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""PostgreSQL's unquoted identifiers (at most 63 bytes): a name that needs no quoting anywhere."""


def airflow_metadata_url(server: str, database: str) -> URL:
    """The SQLAlchemy URL Airflow's components use for `database` on the PostgreSQL server of `server` (an
    assetbus-style URL, `postgresql+asyncpg://…`): psycopg2, libpq's `sslmode` for asyncpg's `ssl`."""
    url = make_url(server)
    tls = url.query.get("sslmode") or url.query.get("ssl")
    query = {"sslmode": tls} if isinstance(tls, str) else {}
    return url.set(drivername="postgresql+psycopg2", database=database, query=query)


def default_database_name(server: str) -> str:
    """`<assetbus's database>_airflow`: beside assetbus's own, one per assetbus database."""
    return f"{make_url(server).database or 'assetbus'}_airflow"[:63]


def _checked(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InfraError(f"{name!r} is not a database name this command creates: use lower-case letters, digits "
                         "and underscores, starting with a letter or underscore, at most 63 characters")
    return name


async def _admin(server: str, verb: str, name: str, statement: str, *args: object) -> object:
    try:
        conn = await asyncpg.connect(asyncpg_dsn(server), timeout=30)
        try:
            return await conn.fetchval(statement, *args)
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        raise InfraError(f"cannot {verb} database {name} on PostgreSQL at "
                         f"{make_url(server).host}: {error}") from error


async def create_database(server: str, name: str) -> None:
    await _admin(server, "create", name, f'CREATE DATABASE "{_checked(name)}"')


async def drop_database(server: str, name: str) -> None:
    await _admin(server, "drop", name, f'DROP DATABASE IF EXISTS "{_checked(name)}" WITH (FORCE)')


async def ensure_database(server: str, name: str) -> bool:
    """Create database `name` unless it exists. True if this call created it."""
    if await _admin(server, "look up", name, "SELECT 1 FROM pg_database WHERE datname = $1", _checked(name)):
        return False
    try:
        await create_database(server, name)
    except InfraError as error:  # created meanwhile by another call
        if isinstance(error.__cause__, asyncpg.DuplicateDatabaseError):
            return False
        raise
    return True
