"""Package namespaces whose names are imported on first use (PEP 562), so that importing one light module
of a package (its settings model, say) does not import the heavy rest of it.

A package `__init__` imports its names for the type checker only (a `__getattr__` the type checker saw would
make any name valid), and `lazy_exports` reads those imports from its source at run time, so the names are
written once:

    if TYPE_CHECKING:
        from package.app import create_api
        from package.config import ApiConfig
    else:
        __getattr__, __dir__ = lazy_exports(__name__)

`from package import create_api` then imports `package.app` at that moment, once, and binds all the
names it exports on the package. A name that is also its module's name (the scheduler's `replay`) is
therefore the exported object once that module is loaded through the package; import such a module
only through its package.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, for the names its `__init__` imports under `if TYPE_CHECKING:`
    (`from module import name, ...` statements)."""
    modules = _type_checking_imports(package)
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded, namespace = importlib.import_module(module), sys.modules[package]
        for exported in modules[module]:  # the next look-ups are plain attributes
            setattr(namespace, exported, getattr(loaded, exported))
        return getattr(namespace, name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


def _type_checking_imports(package: str) -> dict[str, list[str]]:
    """module → names of the imports the package's `__init__` makes for the type checker (read from its source)."""
    init = sys.modules[package].__file__
    assert init is not None
    with open(init, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    module = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
                    found.setdefault(module, []).extend(alias.name for alias in statement.names)
    return found
