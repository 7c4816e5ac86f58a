"""The commands the launcher runs against a local PostgreSQL cluster work with any PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from assetbus.infra import postgres
from assetbus.infra.postgres import Cluster, psql_command

CLUSTER = Cluster(version="15", name="main", port=5433, online=True, data_dir=Path("/nonexistent"), log_file=None)


def test_psql_names_the_cluster_by_its_port_not_the_debian_wrapper_option() -> None:
    command = psql_command(CLUSTER, "SELECT 1")
    assert "--cluster" not in command
    assert command[command.index("-p") + 1] == "5433"
    assert command[-2:] == ["-tAc", "SELECT 1"]


def test_psql_is_the_cluster_versions_own_binary_when_installed(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "15" / "bin" / "psql"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    monkeypatch.setattr(postgres, "PG_LIB", tmp_path)
    assert psql_command(CLUSTER, "SELECT 1")[0] == str(binary)
    monkeypatch.setattr(postgres, "PG_LIB", tmp_path / "elsewhere")
    assert psql_command(CLUSTER, "SELECT 1")[0] == "psql"
