"""How `make test` splits the suite among its pytest-xdist workers (`tests/conftest.py`): the files on the one
Airflow stack, the other files that name airflow, and the cluster's tests are one unit each."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.conftest import AIRFLOW_STACK_FILES, names_airflow, on_airflow_stack
from tests.integration.airflow.stack import group_stack_modules

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", [
    "tests/integration/airflow/test_forwarder.py",
    "tests/integration/chaos/test_kill_anywhere_airflow.py",
    "/home/ci/tests/checkout/tests/integration/airflow/test_triggers.py",  # a checkout under a folder named tests
])
def test_the_files_of_the_shared_stack_are_one_group(path: str) -> None:
    assert on_airflow_stack(path)
    assert names_airflow(path)


@pytest.mark.parametrize("path", [
    "tests/docs/test_airflow_guide_runs.py",
    "tests/integration/assetbus/cli/test_bench_airflow.py",
    "tests/integration/consumers/airflow/test_bridge_topics.py",
])
def test_files_that_start_an_airflow_of_their_own_are_not_on_the_stack(path: str) -> None:
    assert names_airflow(path)
    assert not on_airflow_stack(path)


def test_a_file_that_names_no_airflow_is_in_neither_group() -> None:
    path = "/work/airflow-checkout/tests/integration/chaos/test_kill_anywhere.py"
    assert not names_airflow(path)
    assert not on_airflow_stack(path)


def test_each_place_of_the_stack_exists() -> None:
    for place in AIRFLOW_STACK_FILES:
        assert (REPO / place).exists(), place


def _item(path: str, *fixtures: str) -> pytest.Item:
    """What `group_stack_modules` reads of a collected test: its file and the fixtures it asks for."""
    return cast(pytest.Item, SimpleNamespace(path=REPO / path, fixturenames=list(fixtures)))


def test_the_stacks_tests_run_one_after_the_other_where_the_first_of_them_was() -> None:
    items = [_item("tests/integration/test_a.py"), _item("tests/integration/airflow/test_x.py", "airflow_stack"),
             _item("tests/integration/test_b.py"), _item("tests/integration/airflow/test_y.py", "airflow_stack")]
    order = [str(item.path) for item in items]
    group_stack_modules(items)
    assert [str(item.path) for item in items] == [order[0], order[1], order[3], order[2]]


def test_a_file_outside_the_stacks_places_that_uses_the_stack_is_refused_naming_where_it_belongs() -> None:
    stray = "tests/integration/consumers/test_uses_the_stack.py"
    with pytest.raises(pytest.UsageError) as refused:
        group_stack_modules([_item("tests/integration/airflow/test_x.py", "airflow_stack"),
                             _item(stray, "db_url", "airflow_stack")])
    assert stray in str(refused.value) and "tests/integration/airflow/" in str(refused.value)
