"""The image: dependencies in their own layer, every file the build needs copied, a real CMD and a
HEALTHCHECK, and a wheel that carries the demo's DAGs and the license (so `assetbus demo` works in it)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


INSTRUCTIONS = {"FROM", "WORKDIR", "COPY", "RUN", "ENV", "ARG", "USER", "EXPOSE", "HEALTHCHECK", "CMD"}


def _instructions() -> list[tuple[str, str]]:
    """(instruction, arguments), continuation lines joined; heredoc bodies are not instructions."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    return [(line.split()[0], line.split(None, 1)[1]) for line in joined.splitlines()
            if line.split() and line.split()[0] in INSTRUCTIONS]


def test_dependencies_install_before_the_source_is_copied() -> None:
    steps = _instructions()
    first_source = next(i for i, (op, args) in enumerate(steps) if op == "COPY" and args.startswith("src "))
    dependency_install = next(i for i, (op, args) in enumerate(steps) if op == "RUN" and "requirements" in args)
    assert dependency_install < first_source
    before = " ".join(args for op, args in steps[:dependency_install] if op == "COPY")
    assert "src" not in before.split() and "consumers" not in before.split()


def test_every_copied_path_exists_and_each_distribution_has_its_license() -> None:
    for op, args in _instructions():
        if op == "COPY":
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: no such path"
    for folder in (ROOT, ROOT / "schemas", ROOT / "producers"):
        assert (folder / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_the_image_runs_a_service_and_checks_its_health() -> None:
    ops = dict(_instructions())
    assert "--help" not in ops["CMD"] and '"run"' in ops["CMD"]
    # the role's own probe (assetbus.healthcheck, tests/unit/assetbus/test_healthcheck.py), not the API's in every role
    assert "HEALTHCHECK" in ops and ops["HEALTHCHECK"].endswith('CMD ["python", "-m", "assetbus.healthcheck"]')
    assert "8321" not in ops["HEALTHCHECK"]
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv"} <= set(ignored)


def test_the_wheel_carries_the_demo_dags_and_the_license(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("assetbus-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "assetbus/demo/dags.py" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata and "Classifier: Typing :: Typed" in metadata
