"""Lazily exported package names: each one resolves, to the object its module defines, on first use only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LAZY = sorted(".".join(init.relative_to(src).parent.parts)
              for src in (ROOT / "producers" / "src", ROOT / "consumers" / "src")
              for init in src.rglob("__init__.py") if "lazy_exports(__name__" in init.read_text())


def _fresh(code: str) -> object:
    """What `code` prints as JSON, run in a fresh interpreter (nothing imported beforehand)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_heavy_packages_export_lazily() -> None:
    assert {"assetbus.producers", "assetbus.producers.kafka", "assetbus.consumers.api", "assetbus.consumers.airflow",
            "assetbus.consumers.persister", "assetbus.consumers.scheduler"} <= set(LAZY)


def _type_checking_imports(package: str) -> dict[str, str]:
    """name → module of the imports the package's `__init__` makes for the type checker."""
    init = ROOT / package.split(".")[1] / "src" / Path(*package.split(".")) / "__init__.py"
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                names.update((alias.name, statement.module) for alias in statement.names)
    return names


@pytest.mark.parametrize("package", LAZY)
def test_each_name_is_the_object_of_the_module_the_type_checker_sees(package: str) -> None:
    """The run-time map and the type checker's imports name the same objects, and `__all__` lists them all."""
    expected = _type_checking_imports(package)
    code = f"""
import importlib, json, sys
package = importlib.import_module({package!r})
before = set(sys.modules)
expected = {expected!r}
wrong = [name for name, module in expected.items()
         if getattr(package, name) is not getattr(importlib.import_module(module), name)]
print(json.dumps({{"wrong": wrong, "loaded_on_use": len(set(sys.modules) - before) > 0,
                   "all": sorted(package.__all__), "dir": sorted(set(expected) - set(dir(package)))}}))
"""
    found = _fresh(code)
    assert found == {"wrong": [], "loaded_on_use": True, "all": sorted(expected), "dir": []}


def test_an_unknown_name_is_an_attribute_error_and_a_module_still_imports() -> None:
    code = """
import json
import assetbus.consumers.api as api
try:
    api.no_such_name
    missing = None
except AttributeError as error:
    missing = str(error)
from assetbus.consumers.api import models
print(json.dumps([missing, models.__name__]))
"""
    assert _fresh(code) == ["module 'assetbus.consumers.api' has no attribute 'no_such_name'",
                            "assetbus.consumers.api.models"]


def test_a_name_that_is_also_its_module_s_name_is_the_exported_function() -> None:
    """`scheduler.replay` is a module and a function: loading the module for another name binds the function."""
    code = """
import json
from assetbus.consumers.scheduler import ReplayRange
from assetbus.consumers.scheduler import replay
print(json.dumps([type(replay).__name__, ReplayRange.__name__]))
"""
    assert _fresh(code) == ["function", "ReplayRange"]


def test_importing_the_sdk_loads_none_of_its_modules_until_a_name_is_used() -> None:
    code = """
import json, sys
import assetbus.producers
quiet = "assetbus.producers.assets" not in sys.modules and "aiokafka" not in sys.modules
from assetbus.producers import Asset
print(json.dumps([quiet, "assetbus.producers.assets" in sys.modules, Asset.__name__]))
"""
    assert _fresh(code) == [True, True, "Asset"]
