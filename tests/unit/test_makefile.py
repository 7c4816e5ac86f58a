"""The Makefile's packaging: the three wheels are built and checked by `make test`, and the Airflow venv runs the
SDK from its wheels, rebuilt and reinstalled when any source file of the SDK or the contract changes (not only
their pyproject)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def database() -> str:
    """`make -p`'s rules database: each target with its prerequisites, nothing run."""
    if shutil.which("make") is None:
        pytest.fail("GNU make is missing")
    result = subprocess.run(["make", "-pnq", "-C", str(REPO), "airflow-venv"], capture_output=True, text=True,
                            check=False, timeout=60)
    return result.stdout


def prerequisites(database: str, target: str) -> set[str]:
    found = re.search(rf"^{re.escape(target)}:(?!=)(.*)$", database, flags=re.M)
    assert found is not None, f"no rule for {target}"
    return set(found.group(1).split())


def test_every_source_of_the_sdk_and_the_contract_rebuilds_the_wheels_the_airflow_venv_installs(
        database: str) -> None:
    sources = prerequisites(database, "dist/.sdk-wheels")
    for path in ("producers/src/assetbus/producers/airflow/hook.py", "producers/src/assetbus/producers/kafka/access.py",
                 "schemas/src/assetbus/schemas/commands.py", "producers/pyproject.toml", "schemas/pyproject.toml",
                 "producers/README.md"):
        assert path in sources, path
    assert "dist/.sdk-wheels" in prerequisites(database, ".venv-airflow/.sdk-wheels")
    assert ".venv-airflow/.sdk-wheels" in prerequisites(database, "airflow-venv")


def test_make_test_builds_the_three_wheels_and_checks_them_with_twine(database: str) -> None:
    assert {"dist/.sdk-wheels", "dist/.root-wheel"} <= prerequisites(database, "wheels")
    assert "wheels" in prerequisites(database, "test-setup")
    assert "consumers/src/assetbus/consumers/api/app.py" in prerequisites(database, "dist/.root-wheel")
    makefile = (REPO / "Makefile").read_text()
    assert "$(BIN)/twine check --strict $(DIST)/*.whl" in makefile
