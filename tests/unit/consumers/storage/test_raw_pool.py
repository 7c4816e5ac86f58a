"""The raw asyncpg pool connects as the engine would: the dialect's own translation of the URL."""

from __future__ import annotations

import pytest

from assetbus.consumers.storage.raw_pool import connect_arguments


def test_connect_arguments_are_the_asyncpg_keywords_of_the_url() -> None:
    arguments = connect_arguments("postgresql+asyncpg://ann:s%40cret@db.example:6543/assets?ssl=require")
    assert arguments == {"host": "db.example", "port": 6543, "user": "ann", "password": "s@cret",
                         "database": "assets", "ssl": "require"}


@pytest.mark.parametrize("url", ["postgresql://ann@db/assets", "postgresql+asyncpg://ann@db/assets"])
def test_any_postgresql_url_gets_the_asyncpg_driver(url: str) -> None:
    assert connect_arguments(url) == {"host": "db", "user": "ann", "database": "assets"}


def test_sqlalchemy_only_options_are_not_passed_to_asyncpg() -> None:
    arguments = connect_arguments("postgresql+asyncpg://ann@db/assets?prepared_statement_cache_size=50")
    assert "prepared_statement_cache_size" not in arguments
