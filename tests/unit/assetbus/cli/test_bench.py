"""`assetbus bench` runs on a plain install: every library the benchmarks import is a runtime dependency."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import assetbus.benchmarks

BENCHMARKS = Path(next(iter(assetbus.benchmarks.__path__)))


def imported_top_level_modules(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        if "airflow_dags" in path.parts:  # DAG files: Airflow's own virtualenv runs them, not the CLI
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def runtime_requirements(distribution: str) -> set[str]:
    names = set()
    for requirement in requires(distribution) or []:
        if "extra ==" in requirement:
            continue
        names.add(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_every_library_the_benchmarks_import_is_installed_with_the_cli() -> None:
    third_party = {m for m in imported_top_level_modules(BENCHMARKS)
                   if m not in sys.stdlib_module_names and m not in {"assetbus", "__future__"}}
    distributions = packages_distributions()
    needed = {dist.lower().replace("_", "-") for module in third_party for dist in distributions.get(module, [module])}
    needed -= {"assetbus", "assetbus-sdk", "assetbus-schemas"}
    missing = needed - runtime_requirements("assetbus")
    assert "psutil" in needed
    assert not missing, f"imported by src/assetbus/benchmarks but only installed by an extra: {sorted(missing)}"
