"""DATABASE_URL as users paste it: plain `postgresql://`, and libpq's `sslmode=` of managed services; set but
empty, it is refused by name rather than read as "the local one"."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assetbus.consumers.persister import PersisterConfig
from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.settings import ConnectionSettings, normalize_db_url


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


@pytest.mark.parametrize("variable", ["DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS"])
@pytest.mark.parametrize("value", ["", "  "])
def test_a_connection_set_but_empty_is_refused_by_name_not_read_as_the_local_one(
        monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match=rf"{variable} is set but empty; give a value, or unset {variable}"):
        ConnectionSettings(_env_file=None)


def test_unset_is_the_local_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert ConnectionSettings(_env_file=None).database_url is None


def test_a_service_given_an_empty_database_url_refuses_it_by_name() -> None:
    with pytest.raises(ValidationError, match="DATABASE_URL is empty"):
        PersisterConfig(database_url="", token_secret="a-secret-long-enough-for-hs256-signing-keys")
