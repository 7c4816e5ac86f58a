"""Loading consumer DAG definitions from Python files (`assetbus dags sync PATH`).

Every `*.py` file under PATH (names starting with `_` or `.` are skipped) is executed in its own
namespace; each module-level `ConsumerDag` in it is a definition. A file that fails to import
or defines a bad DAG is reported with the reason, and its DAGs are left as they are in the
database (neither updated nor deactivated), like an orchestrator's import errors.
"""

from __future__ import annotations

import hashlib
import runpy
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from assetbus.consumers.scheduler.dag import ConsumerDag


@dataclass(frozen=True, slots=True)
class LoadedDag:
    dag: ConsumerDag
    fileloc: str
    """Absolute path of the file that defines it."""


@dataclass
class LoadResult:
    root: str
    """Absolute path that was loaded (a folder or one file)."""
    dags: list[LoadedDag] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """File → why it could not be loaded."""


def load_dag_files(path: str | Path) -> LoadResult:
    """Execute the DAG files under `path` and collect their definitions. Raises FileNotFoundError only."""
    root = Path(path).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(f"no such file or folder: {root}")
    result = LoadResult(root=str(root))
    defined_in: dict[str, str] = {}
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*.py") if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts))
    for file in files:
        fileloc = str(file)
        module = "assetbus_dagfile_" + hashlib.sha1(fileloc.encode()).hexdigest()[:12]
        try:
            namespace = runpy.run_path(fileloc, run_name=module)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            result.errors[fileloc] = f"invalid definition ({error.title}{'.' + where if where else ''}): {first['msg']}"
            continue
        except (Exception, SystemExit) as error:
            result.errors[fileloc] = f"{type(error).__name__}: {error}"
            continue
        found: dict[str, ConsumerDag] = {}
        problem: str | None = None
        for value in namespace.values():
            if not isinstance(value, ConsumerDag):
                continue
            if value.dag_id in defined_in:
                problem = f"dag_id {value.dag_id!r} is already defined in {defined_in[value.dag_id]}"
            elif found.get(value.dag_id, value) != value:
                problem = f"dag_id {value.dag_id!r} is defined twice in this file"
            found[value.dag_id] = value
        if problem is not None:
            result.errors[fileloc] = problem
            continue
        for dag in found.values():
            defined_in[dag.dag_id] = fileloc
            result.dags.append(LoadedDag(dag, fileloc))
    return result

