"""Connection faults become one sentence and a documented exit code; anything else stays a bug."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
import typer

from assetbus.cli.events import parse_since
from assetbus.cli.failures import ExitCode, explain
from assetbus.cli.output import to_json


def _raised(error: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        raise error from cause
    except BaseException as caught:
        return caught


def test_asyncpg_login_failure_names_database_url() -> None:
    import asyncpg

    explained = explain(_raised(asyncpg.InvalidPasswordError("password authentication failed")))
    assert explained is not None and explained.code == ExitCode.DATABASE_UNREACHABLE
    assert "DATABASE_URL" in explained.message


def test_missing_table_asks_for_migrate() -> None:
    import asyncpg
    from sqlalchemy.exc import ProgrammingError

    error = _raised(ProgrammingError("SELECT", {}, Exception("x")), asyncpg.UndefinedTableError("no assets"))
    explained = explain(error)
    assert explained is not None and explained.code == ExitCode.NOT_MIGRATED and "assetbus migrate" in explained.message


def test_kafka_connection_error_names_bootstrap_setting() -> None:
    from aiokafka.errors import KafkaConnectionError

    explained = explain(_raised(KafkaConnectionError("Unable to bootstrap")))
    assert explained is not None and explained.code == ExitCode.KAFKA_UNREACHABLE
    assert "KAFKA_BOOTSTRAP_SERVERS" in explained.message


def test_an_ordinary_bug_is_not_explained_away() -> None:
    assert explain(_raised(ValueError("a bug"))) is None
    assert explain(_raised(asyncio.CancelledError())) is None


def test_since_takes_durations_and_dates() -> None:
    assert abs((datetime.now(UTC) - timedelta(minutes=15)) - parse_since("15m")).total_seconds() < 5  # type: ignore[operator]
    assert parse_since("2026-12-01T10:00") == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert parse_since(None) is None
    with pytest.raises(typer.BadParameter):
        parse_since("yesterday")


def test_json_output_writes_dates_and_bytes() -> None:
    assert to_json({"at": datetime(2026, 1, 1, tzinfo=UTC), "b": b"x"}, compact=True) == \
        '{"at":"2026-01-01T00:00:00+00:00","b":"x"}'


def test_the_services_exit_codes_are_the_documented_ones() -> None:
    from assetbus.producers.kafka import EXIT_STARTUP_TIMEOUT
    from assetbus.producers.kafka.access import EXIT_ACCESS_DENIED
    from assetbus.producers.kafka.topics import EXIT_TOPICS_NOT_CREATED

    assert (EXIT_STARTUP_TIMEOUT, EXIT_ACCESS_DENIED, EXIT_TOPICS_NOT_CREATED) == (
        ExitCode.STARTUP_TIMEOUT, ExitCode.ACCESS_DENIED, ExitCode.TOPICS_NOT_CREATED)
