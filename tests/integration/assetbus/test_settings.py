"""A DATABASE_URL with libpq's `sslmode=require`, as managed PostgreSQL services hand it out, connects."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from assetbus.consumers.storage import create_engine
from assetbus.infra.postgres import try_connect
from assetbus.settings import normalize_db_url

pytestmark = pytest.mark.integration


def libpq_style(db_url: str) -> str:
    """The test database's URL as a managed service writes it: `postgresql://…?sslmode=require`."""
    return make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False) + "?sslmode=require"


async def server_has_ssl(db_url: str) -> bool:
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            return bool((await conn.execute(text("SHOW ssl"))).scalar() == "on")
    finally:
        await engine.dispose()


async def test_an_sslmode_require_url_connects_over_tls(db_url: str) -> None:
    if not await server_has_ssl(db_url):
        pytest.skip("this PostgreSQL has no TLS (ssl = off)")
    engine = create_engine(normalize_db_url(libpq_style(db_url)))
    try:
        async with engine.connect() as conn:
            encrypted = (await conn.execute(text("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"))).scalar()
    finally:
        await engine.dispose()
    assert encrypted is True


async def test_the_launchers_check_accepts_the_same_url(db_url: str) -> None:
    if not await server_has_ssl(db_url):
        pytest.skip("this PostgreSQL has no TLS (ssl = off)")
    assert try_connect(normalize_db_url(libpq_style(db_url))) is None
