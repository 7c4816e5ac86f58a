"""The name and URL of Airflow's metadata database beside assetbus's own."""

from __future__ import annotations

import asyncio

import pytest

from assetbus.infra.databases import airflow_metadata_url, default_database_name, drop_database
from assetbus.infra.errors import InfraError


def test_the_default_name_follows_assetbus_database() -> None:
    assert default_database_name("postgresql+asyncpg://a:b@db:5432/assetbus") == "assetbus_airflow"
    assert default_database_name("postgresql+asyncpg://a:b@db:5432/assetbus_t_0123456789ab") \
        == "assetbus_t_0123456789ab_airflow"
    assert len(default_database_name("postgresql://a:b@db/" + "x" * 63)) == 63


def test_airflow_gets_psycopg2_on_the_same_server_and_credentials() -> None:
    url = airflow_metadata_url("postgresql+asyncpg://app:pw@db.internal:6543/assetbus?ssl=require", "assetbus_airflow")
    assert url.render_as_string(hide_password=False) == (
        "postgresql+psycopg2://app:pw@db.internal:6543/assetbus_airflow?sslmode=require")


@pytest.mark.parametrize("name", ["Airflow", 'a"b', "a b", "1st", "x" * 64, ""])
def test_a_name_that_needs_quoting_is_refused_before_connecting(name: str) -> None:
    with pytest.raises(InfraError, match="not a database name"):
        asyncio.run(drop_database("postgresql://nobody@127.0.0.1:1/none", name))
