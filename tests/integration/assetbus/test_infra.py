"""`up` against the real machine: idempotent and fast when everything already runs.

Leaves Kafka and PostgreSQL running (other integration tests use them).
"""

from __future__ import annotations

import time

import pytest

from assetbus.infra import status, up
from assetbus.settings import ConnectionSettings, InfraSettings

pytestmark = pytest.mark.integration


def test_up_twice_is_a_fast_no_op() -> None:
    infra, conn = InfraSettings(), ConnectionSettings()
    first = up(infra, conn)
    assert first.kafka.running and first.postgres.running

    started = time.monotonic()
    second = up(infra, conn)
    elapsed = time.monotonic() - started

    assert elapsed < 5.0, f"second `up` took {elapsed:.1f} s"
    assert second.kafka.pid == first.kafka.pid
    assert second.postgres.pid == first.postgres.pid
    assert second.kafka.running and second.postgres.running


def test_status_reports_both_running() -> None:
    infra, conn = InfraSettings(), ConnectionSettings()
    up(infra, conn)
    result = status(infra, conn)
    assert result.running
    assert result.kafka.name == "kafka" and result.postgres.name == "postgresql"
    assert result.kafka.address == conn.bootstrap(infra) or not result.kafka.managed
