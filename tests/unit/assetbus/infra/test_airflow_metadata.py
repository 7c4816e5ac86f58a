"""LocalAirflow's metadata DB: SQLite in its home by default, or a database of its own on a PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from assetbus.infra.airflow import LocalAirflow, postgres_driver_missing
from assetbus.infra.databases import airflow_metadata_url
from assetbus.infra.errors import InfraError

SERVER = "postgresql+asyncpg://assetbus:s3cret@db.example:5433/assetbus"


def conn(airflow: LocalAirflow) -> str:
    return airflow.env()["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]


def test_sqlite_in_its_home_by_default(tmp_path: Path) -> None:
    airflow = LocalAirflow(tmp_path, tmp_path / "dags")
    assert conn(airflow) == f"sqlite:///{tmp_path / 'airflow.db'}"
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC" not in airflow.env()


def test_postgres_is_a_database_of_its_own_on_the_server_through_psycopg2(tmp_path: Path) -> None:
    airflow = LocalAirflow(tmp_path, tmp_path / "dags", metadata="postgres", postgres_server=SERVER,
                           metadata_database="airflow_abc")
    assert conn(airflow) == "postgresql+psycopg2://assetbus:s3cret@db.example:5433/airflow_abc"
    # Airflow derives its async URL (asyncpg) from that one: nothing to override without TLS settings
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC" not in airflow.env()
    assert "s3cret" not in repr(airflow)


def test_each_postgres_airflow_gets_a_fresh_database_name(tmp_path: Path) -> None:
    one, two = (LocalAirflow(tmp_path, tmp_path, metadata="postgres", postgres_server=SERVER) for _ in range(2))
    assert one.metadata_database != two.metadata_database
    assert one.metadata_database.startswith("airflow_")


def test_asyncpg_ssl_becomes_libpq_sslmode_and_the_async_url_keeps_asyncpgs_name(tmp_path: Path) -> None:
    airflow = LocalAirflow(tmp_path, tmp_path, metadata="postgres", postgres_server=SERVER + "?ssl=require",
                           metadata_database="airflow_tls")
    assert conn(airflow).endswith("/airflow_tls?sslmode=require")
    assert airflow.env()["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"] == (
        "postgresql+asyncpg://assetbus:s3cret@db.example:5433/airflow_tls?ssl=require")
    assert str(airflow_metadata_url(SERVER + "?sslmode=verify-full&application_name=x", "a").query["sslmode"]) \
        == "verify-full"


def test_the_server_defaults_to_assetbus_database_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://someone:pw@pg.internal:6543/app")
    airflow = LocalAirflow(tmp_path, tmp_path, metadata="postgres", metadata_database="airflow_x")
    assert conn(airflow) == "postgresql+psycopg2://someone:pw@pg.internal:6543/airflow_x"


def test_an_unknown_metadata_db_is_refused_before_anything_starts(tmp_path: Path) -> None:
    airflow = LocalAirflow(tmp_path / "home", tmp_path, metadata="mysql")
    with pytest.raises(InfraError, match="sqlite, postgres"):
        airflow.launch()
    assert not (tmp_path / "home").exists()


def test_a_venv_without_the_postgres_driver_is_named_with_its_fix(tmp_path: Path) -> None:
    assert "make airflow-venv" in (postgres_driver_missing(tmp_path / "none") or "")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    assert "apache-airflow[postgres]" in (postgres_driver_missing(tmp_path / "venv") or "")
    python.write_text("#!/bin/sh\nexit 0\n")
    assert postgres_driver_missing(tmp_path / "venv") is None
