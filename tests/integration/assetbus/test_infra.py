"""`up` against the real machine: idempotent and fast when everything already runs.

Leaves Kafka and PostgreSQL running (other integration tests use them).
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from assetbus.infra import status, up
from assetbus.infra.postgres import list_clusters, pick_cluster, psql
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


def test_the_role_set_up_works_when_the_versioned_binaries_come_first_in_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = pick_cluster(list_clusters(), InfraSettings().pg_port) if shutil.which("pg_lsclusters") else None
    if cluster is None or not cluster.online or (os.geteuid() != 0 and shutil.which("sudo") is None):
        pytest.skip("no local Debian PostgreSQL cluster to run psql against")
    monkeypatch.setenv("PATH", f"/usr/lib/postgresql/{cluster.version}/bin:{os.environ['PATH']}")
    assert psql(cluster, "SELECT 40 + 2") == "42"
