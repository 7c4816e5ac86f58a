"""DATABASE_URL naming a primary and its standby: libpq's host list for asyncpg, the dialect's `host=` parameters
for the engines, `target_session_attrs=read-write` reaching `asyncpg.connect` either way."""

from __future__ import annotations

from typing import Any

import pytest
from asyncpg import connect_utils
from sqlalchemy.engine import make_url

from assetbus.consumers.storage.raw_pool import connect_arguments
from assetbus.consumers.storage.urls import asyncpg_dsn, engine_url, host_list, wants_writes
from assetbus.settings import ConnectionSettings, InfraSettings

LIBPQ = "postgresql://ann:s%40cret@db-a:5432,db-b:6543/assets?target_session_attrs=read-write&sslmode=require"
ENGINE = ("postgresql+asyncpg://ann:s%40cret@/assets?host=db-a:5432&host=db-b:6543"
          "&target_session_attrs=read-write&ssl=require")


def asyncpg_reads(dsn: str) -> tuple[list[tuple[str, int]], str]:
    """The hosts and session attribute asyncpg itself takes from a DSN."""
    names = ("host", "port", "user", "password", "passfile", "database", "ssl", "service", "servicefile",
             "direct_tls", "server_settings", "target_session_attrs", "krbsrvname", "gsslib")
    arguments: dict[str, Any] = dict.fromkeys(names)
    addresses, params = connect_utils._parse_connect_dsn_and_args(dsn=dsn, **arguments)
    return list(addresses), params.target_session_attrs.value


def test_a_libpq_host_list_becomes_the_dialects_host_parameters() -> None:
    assert engine_url(LIBPQ) == ENGINE


def test_the_engine_spelling_is_kept_as_it_is() -> None:
    assert engine_url(ENGINE) == ENGINE
    assert engine_url(engine_url(LIBPQ)) == ENGINE


def test_a_host_without_a_port_gets_postgresqls_default_port() -> None:
    assert engine_url("postgres://ann@db-a,db-b:6543/assets") == \
        "postgresql+asyncpg://ann@/assets?host=db-a:5432&host=db-b:6543"


def test_a_single_host_url_is_unchanged_but_for_the_driver_and_sslmode() -> None:
    assert engine_url("postgresql://ann@db:6543/assets?sslmode=require") == \
        "postgresql+asyncpg://ann@db:6543/assets?ssl=require"
    assert asyncpg_dsn("postgresql+asyncpg://ann@db:6543/assets?ssl=require") == \
        "postgresql://ann@db:6543/assets?sslmode=require"


def test_the_dialect_connects_to_every_host_in_order_and_asks_for_the_writable_one() -> None:
    url = make_url(engine_url(LIBPQ))
    _, kwargs = url.get_dialect()().create_connect_args(url)
    assert kwargs["host"] == ["db-a", "db-b"]
    assert kwargs["port"] == [5432, 6543]
    assert kwargs["target_session_attrs"] == "read-write"
    assert kwargs["password"] == "s@cret"


def test_the_raw_pool_connects_as_the_engine_would_to_a_host_list() -> None:
    arguments = connect_arguments(LIBPQ)
    assert (arguments["host"], arguments["port"]) == (["db-a", "db-b"], [5432, 6543])
    assert arguments["target_session_attrs"] == "read-write"
    assert arguments["ssl"] == "require"


def test_asyncpg_gets_the_host_list_back_not_only_the_last_host() -> None:
    assert asyncpg_dsn(ENGINE) == \
        "postgresql://ann:s%40cret@db-a:5432,db-b:6543/assets?target_session_attrs=read-write&sslmode=require"
    assert asyncpg_reads(asyncpg_dsn(ENGINE)) == ([("db-a", 5432), ("db-b", 6543)], "read-write")
    assert asyncpg_reads(asyncpg_dsn(LIBPQ)) == ([("db-a", 5432), ("db-b", 6543)], "read-write")


def test_repeated_host_parameters_alone_would_lose_hosts_in_asyncpg() -> None:
    """Why `asyncpg_dsn` exists: asyncpg keeps only the last of repeated `host=` parameters."""
    plain = make_url(ENGINE).set(drivername="postgresql").render_as_string(hide_password=False)
    assert asyncpg_reads(plain)[0] == [("db-b", 6543)]


@pytest.mark.parametrize("given", [LIBPQ, ENGINE])
def test_database_url_in_either_spelling_reaches_every_service_as_the_engine_url(given: str) -> None:
    assert ConnectionSettings(database_url=given).db_url(InfraSettings()) == ENGINE


@pytest.mark.parametrize("given", [LIBPQ, ENGINE])
def test_the_hosts_a_url_names_and_whether_it_asks_for_writes(given: str) -> None:
    assert host_list(given) == ["db-a:5432", "db-b:6543"]
    assert wants_writes(given)
    assert host_list("postgresql://ann@db-a/assets") == ["db-a:5432"]
    assert not wants_writes("postgresql://ann@db-a/assets?target_session_attrs=any")
