"""Which infrastructure the tests use: configured services, testcontainers, or the launcher."""

from __future__ import annotations

import pytest

from tests import infra_source


def test_configured_services_win_over_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSETBUS_TEST_INFRA", raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db/x")
    monkeypatch.setattr(infra_source, "docker_engine_reachable", lambda: True)
    assert infra_source.use_testcontainers() is False


def test_a_reachable_engine_means_testcontainers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASSETBUS_TEST_INFRA", "DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(infra_source, "docker_engine_reachable", lambda: True)
    assert infra_source.use_testcontainers() is True
    monkeypatch.setattr(infra_source, "docker_engine_reachable", lambda: False)
    assert infra_source.use_testcontainers() is False


def test_the_choice_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(infra_source, "docker_engine_reachable", lambda: True)
    monkeypatch.setenv("ASSETBUS_TEST_INFRA", "launcher")
    assert infra_source.use_testcontainers() is False
    monkeypatch.setenv("ASSETBUS_TEST_INFRA", "testcontainers")
    assert infra_source.use_testcontainers() is True
