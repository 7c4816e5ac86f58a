"""The bridge's settings: one model, its options made from it (`--dag` repeatable), validated at the edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

from assetbus.cli.options import CONNECTION, LogSettings, build, env_name, settings_options
from assetbus.consumers.airflow import AirflowAccount, BridgeConfig
from assetbus.producers.kafka import KafkaConnection

GIVEN: dict[str, Any] = {"kafka": KafkaConnection(bootstrap_servers=("127.0.0.1:1",)),
                         "database_url": "postgresql+asyncpg://u@h/db",
                         "airflow": AirflowAccount(url="http://airflow:8080", username="u", password="s3cr3t-pw")}


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    for name in BridgeConfig.model_fields:
        monkeypatch.delenv(env_name(BridgeConfig, name), raising=False)


def _invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, list[BridgeConfig]]:
    seen: list[BridgeConfig] = []
    app = typer.Typer()

    @app.command()
    @settings_options(BridgeConfig, LogSettings, skip=CONNECTION | {"airflow"})
    def bridge(options: dict[str, Any]) -> None:
        seen.append(build(BridgeConfig, options, **GIVEN))

    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.output, seen


def test_dag_is_a_repeatable_option_and_the_rest_keep_their_defaults() -> None:
    code, output, seen = _invoke(["--dag", "orders", "--dag", "daily", "--concurrency", "4"])
    assert code == 0, output
    assert seen[0].dag_ids == ("orders", "daily")
    assert seen[0].concurrency == 4
    assert seen[0].group_id == "assetbus-airflow-bridge" and seen[0].metrics_port is None


def test_every_option_can_come_from_the_environment() -> None:
    env = {"ASSETBUS_BRIDGE_DAG_IDS": "orders daily", "ASSETBUS_BRIDGE_POLL_INTERVAL_S": "0.5",
           "ASSETBUS_BRIDGE_METRICS_PORT": "9470"}
    code, output, seen = _invoke([], env=env)
    assert code == 0, output
    assert seen[0].dag_ids == ("orders", "daily")
    assert seen[0].poll_interval_s == 0.5 and seen[0].metrics_port == 9470


def test_without_dag_the_bridge_serves_the_dags_airflow_tags() -> None:
    assert BridgeConfig(**GIVEN).dag_ids == ()


def test_help_shows_the_dag_option_the_metadata_database_and_the_environment_names() -> None:
    code, output, _ = _invoke(["--help"], env={"COLUMNS": "200"})
    assert code == 0
    assert "--dag " in output and "(required)" not in output and "PydanticUndefined" not in output
    assert "--airflow-metadata-url" in output and "--sync-interval-s" in output
    assert "ASSETBUS_BRIDGE_CONCURRENCY" in output


@pytest.mark.parametrize("bad", [{"dag_ids": ("",)}, {"concurrency": 0},
                                 {"backoff_initial_s": 5.0, "backoff_max_s": 1.0}])
def test_invalid_values_are_refused_by_the_model(bad: dict[str, Any]) -> None:
    values = {"dag_ids": ("orders",), **bad}
    with pytest.raises(ValidationError):
        BridgeConfig(**GIVEN, **values)


def test_the_airflow_password_stays_out_of_the_models_repr() -> None:
    config = BridgeConfig(**GIVEN, dag_ids=("orders",))
    assert "s3cr3t-pw" not in repr(config) and "airflow:8080" not in repr(config)


def test_the_run_lease_is_set_like_the_forwarders_and_reaches_the_ledger() -> None:
    from assetbus.consumers.airflow.bridge import AirflowBridge
    from assetbus.consumers.readiness import DatabaseLedger

    code, output, seen = _invoke(["--lease-s", "15"])
    assert code == 0, output
    assert seen[0].lease_s == 15
    assert _invoke([], env={"ASSETBUS_BRIDGE_LEASE_S": "20"})[2][0].lease_s == 20
    assert _invoke(["--lease-s", "0"])[0] != 0
    bridge = AirflowBridge(seen[0].model_copy(update={"dag_ids": ("orders",)}))
    ledger = bridge.subscribers[0]._ledger
    assert isinstance(ledger, DatabaseLedger) and ledger.lease_s == 15
