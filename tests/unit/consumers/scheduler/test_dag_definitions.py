"""Consumer DAG definitions: validated on construction, stable JSON, loaded from Python files."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assetbus.consumers.scheduler import AllOf, AssetWait, ConsumerDag, HourlyToDaily, load_dag_files

GOOD = """
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, HourlyToDaily
daily = ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("Europe/Amsterdam")))
alias = daily
"""


def test_a_definition_round_trips_through_json_with_the_same_fingerprint() -> None:
    dag = ConsumerDag(dag_id="d", schedule=AllOf(AssetWait("a", mapping=HourlyToDaily("UTC")), AssetWait("b")),
                      coalesce=False)
    again = ConsumerDag.from_definition(dag.definition())
    assert again == dag and again.fingerprint() == dag.fingerprint()


def test_a_stored_definition_that_cannot_be_read_is_none_for_the_views() -> None:
    dag = ConsumerDag(dag_id="d", schedule=AssetWait("a", mapping=HourlyToDaily("UTC")))
    assert ConsumerDag.readable(dag.definition()) == dag
    written_by_a_newer_version = {**dag.definition(), "schedule": {"kind": "every_minute", "asset": "a"}}
    assert ConsumerDag.readable(written_by_a_newer_version) is None
    assert ConsumerDag.readable({"dag_id": "d"}) is None


def test_an_asset_may_appear_only_once_in_a_schedule() -> None:
    with pytest.raises(ValidationError, match="appears twice"):
        ConsumerDag(dag_id="d", schedule=AllOf(AssetWait("a"), AssetWait("a", mapping=HourlyToDaily("UTC"))))


@pytest.mark.parametrize("dag_id", ["", "has space", "slash/ed", "x" * 201])
def test_a_dag_id_must_be_usable_in_a_topic_name(dag_id: str) -> None:
    with pytest.raises(ValidationError):
        ConsumerDag(dag_id=dag_id, schedule=AssetWait("a"))


def test_files_are_loaded_and_each_dag_counted_once(tmp_path: Path) -> None:
    (tmp_path / "daily.py").write_text(GOOD)
    (tmp_path / "_helpers.py").write_text("raise RuntimeError('never imported')")
    result = load_dag_files(tmp_path)
    assert [(d.dag.dag_id, Path(d.fileloc).name) for d in result.dags] == [("daily", "daily.py")]
    assert result.errors == {}


def test_a_broken_file_is_reported_and_does_not_hide_the_others(tmp_path: Path) -> None:
    (tmp_path / "a_broken.py").write_text("import nonexistent_module_xyz")
    (tmp_path / "b_bad_zone.py").write_text(GOOD.replace("Europe/Amsterdam", "Mars/Olympus"))
    (tmp_path / "c_good.py").write_text(GOOD)
    result = load_dag_files(tmp_path)
    assert [d.dag.dag_id for d in result.dags] == ["daily"]
    errors = {Path(k).name: v for k, v in result.errors.items()}
    assert "ModuleNotFoundError" in errors["a_broken.py"]
    assert "unknown time zone" in errors["b_bad_zone.py"]


def test_the_same_dag_id_in_two_files_is_an_error_on_the_second(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(GOOD)
    (tmp_path / "two.py").write_text(GOOD)
    result = load_dag_files(tmp_path)
    assert len(result.dags) == 1
    assert "already defined" in result.errors[str(tmp_path / "two.py")]


def test_a_missing_path_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_dag_files(tmp_path / "nope")
