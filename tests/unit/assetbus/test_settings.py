"""DATABASE_URL as users paste it: plain `postgresql://`, and libpq's `sslmode=` of managed services."""

from __future__ import annotations

import pytest

from assetbus.infra.postgres import asyncpg_dsn
from assetbus.settings import normalize_db_url


@pytest.mark.parametrize(("given", "used"), [
    ("postgresql://u:p@db.example.com:5432/app", "postgresql+asyncpg://u:p@db.example.com:5432/app"),
    ("postgres://u:p@db/app?sslmode=require", "postgresql+asyncpg://u:p@db/app?ssl=require"),
    ("postgresql+asyncpg://u@db/app?application_name=x&sslmode=verify-full",
     "postgresql+asyncpg://u@db/app?application_name=x&ssl=verify-full"),
    ("postgresql+asyncpg://u@db/app?ssl=require", "postgresql+asyncpg://u@db/app?ssl=require"),
])
def test_a_database_url_is_given_the_asyncpg_driver_and_its_ssl_parameter(given: str, used: str) -> None:
    assert normalize_db_url(given) == used


def test_the_launchers_direct_check_speaks_libpq_again() -> None:
    assert asyncpg_dsn("postgresql+asyncpg://u@db/app?ssl=require") == "postgresql://u@db/app?sslmode=require"
