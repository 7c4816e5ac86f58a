"""How `make test` splits the suite among its pytest-xdist workers (`tests/conftest.py`): the files on the one
Airflow stack, the other files that name airflow, and the cluster's tests are one unit each."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import AIRFLOW_STACK_FILES, names_airflow, on_airflow_stack

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
