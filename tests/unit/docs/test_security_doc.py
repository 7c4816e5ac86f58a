"""docs/security.md: its code blocks run as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[3] / "docs" / "security.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_python_block_mints_and_verifies_a_token_with_a_publication_policy() -> None:
    (code,) = blocks("python")
    exec(compile(code, str(DOC), "exec"), {})  # its asserts are the test


def test_the_shell_block_makes_keys_mints_a_token_and_a_worker_credential_and_verifies_them(tmp_path: Path) -> None:
    (script,) = blocks("bash")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    env.pop("ASSETBUS_TOKEN_SECRET", None)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    inspected = json.loads(done.stdout[done.stdout.index('{\n  "claims"'):])
    assert inspected["verified"] == "valid"
    assert inspected["claims"]["publish"] == [{"name": "orders", "uri": "s3://bucket/orders/"}]


@pytest.mark.parametrize("heading", ["## Who holds which key", "## What each token may do",
                                     "## Tokens for Airflow attempts", "## What the services refuse"])
def test_the_trust_model_sections_are_there(heading: str) -> None:
    assert heading in DOC.read_text()


def test_the_threat_table_names_tests_that_exist() -> None:
    text = DOC.read_text()
    section = text[text.index("## Tokens for Airflow attempts"):text.index("## Airflow's state store backend")]
    attacks = "".join(path.read_text() for path in (DOC.parents[1] / "tests" / "integration").rglob("test_*.py"))
    named = re.findall(r"`(test_\w+)`", section)
    assert len(named) >= 6
    for name in named:
        assert f"def {name}(" in attacks, name
    for path in re.findall(r"`(tests/[\w/]+\.py)`", section):
        assert (DOC.parents[1] / path).exists(), path
