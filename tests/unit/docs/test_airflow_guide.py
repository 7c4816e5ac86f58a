"""docs/airflow.md runs in CI: each Python block is an excerpt of an example the Airflow tests run, and each
command is one the Airflow tests (or `make airflow-venv`) run."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
GUIDE = REPO / "docs" / "airflow.md"
EXAMPLES = [*sorted((REPO / "examples" / "airflow").rglob("*.py"))]

RUN_BY_TESTS = {
    # command in the guide → where the Airflow suite runs it
    "pip install 'assetbus-sdk[airflow]'": "Makefile airflow-venv: pip install -e './producers[airflow]'",
    "assetbus airflow sync": "AirflowStack.start (tests/integration/airflow/conftest.py)",
    "assetbus token worker": "AirflowStack.start: the password of the workers' connection assetbus_default",
    "assetbus dags sync examples/airflow/consumers.py": "AirflowStack.start (a folder holding that file)",
    "assetbus run airflow-bridge --dag orders_by_partition --dag daily_clicks_report":
        "tests/integration/airflow/test_consumer_dags.py::bridge",
}


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)


def test_every_python_block_is_an_excerpt_of_an_example_the_airflow_tests_run() -> None:
    sources = [path.read_text() for path in EXAMPLES]
    found = blocks("python")
    assert len(found) >= 5
    for block in found:
        assert any(block in source for source in sources), f"not in examples/airflow/: {block[:200]}"


def test_every_command_in_the_guide_is_run_by_the_airflow_suite() -> None:
    commands = [line.strip() for block in blocks("console") for line in block.splitlines() if line.strip()]
    assert commands
    for command in commands:
        assert command in RUN_BY_TESTS, f"no test runs {command!r}"
    makefile = (REPO / "Makefile").read_text()
    assert "-e './producers[airflow]'" in makefile
    bridge_test = (REPO / "tests" / "integration" / "airflow" / "test_consumer_dags.py").read_text()
    assert '"airflow-bridge", "--dag", "orders_by_partition", "--dag", "daily_clicks_report"' in bridge_test
    stack = (REPO / "src" / "assetbus" / "infra" / "airflow_stack.py").read_text()
    assert 'self.cli("airflow", "sync")' in stack and 'self.cli("dags", "sync"' in stack
    assert 'self.cli("token", "worker")' in stack


def test_every_airflow_cfg_line_is_what_the_airflow_stack_configures() -> None:
    from assetbus.infra.airflow_stack import STATE_STORE_BACKEND

    found = blocks("ini")
    assert found == [f"[state_store]\nbackend = {STATE_STORE_BACKEND}\n"]
    stack = (REPO / "src" / "assetbus" / "infra" / "airflow_stack.py").read_text()
    assert '"AIRFLOW__STATE_STORE__BACKEND": STATE_STORE_BACKEND' in stack


def test_only_python_console_and_airflow_cfg_blocks() -> None:
    fences = re.findall(r"^```(\w*)$", GUIDE.read_text(), flags=re.M)
    assert set(fences[::2]) <= {"python", "console", "ini"}, fences
