"""Loading consumer DAG definitions from Python files and syncing them into the database (`assetbus dags
sync PATH`; the rules are in docs/consumer-dags.md).

A file that fails to import or defines a bad DAG is reported with the reason, and its DAGs are left as they
are in the database (neither updated nor deactivated), like an orchestrator's import errors. A DAG whose
outlets feed its own schedule is refused, or written with a warning under `allow_self_trigger`.
"""

from __future__ import annotations

import hashlib
import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.storage import assets_by_name
from assetbus.consumers.storage.dags import SyncChange, dags_under, deactivate_dags, upsert_dag
from assetbus.consumers.storage.task_assets import list_task_assets


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


@dataclass(frozen=True, slots=True)
class DagSyncOutcome:
    dag_id: str
    fileloc: str
    change: SyncChange | None
    """None when the DAG was not written; `error` says why."""
    error: str | None = None
    warning: str | None = None
    """Set when the DAG was written despite a problem (a self-trigger under `allow_self_trigger`)."""


@dataclass
class SyncReport:
    outcomes: list[DagSyncOutcome] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    file_errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.file_errors and all(o.error is None for o in self.outcomes)

    @property
    def synced(self) -> list[str]:
        """DAGs that are active as defined now."""
        return [o.dag_id for o in self.outcomes if o.change is not None]

    def count(self, change: SyncChange) -> int:
        return sum(1 for o in self.outcomes if o.change is change)


async def sync_dags(conn: AsyncConnection, loaded: LoadResult, *, allow_self_trigger: bool = False) -> SyncReport:
    """Write `loaded` into the database, in the caller's transaction (module docstring; a DAG's outlets are
    declared, or tasks registered as outlets)."""
    report = SyncReport(file_errors=dict(loaded.errors))
    registered = await assets_by_name(conn, {asset for item in loaded.dags for asset in item.dag.assets})
    outlets: dict[str, set[str]] = {}
    for row in await list_task_assets(conn):
        if row.role == "outlet":
            outlets.setdefault(row.dag_id, set()).add(row.asset_name)
    for item in loaded.dags:
        dag = item.dag
        missing = [asset for asset in dag.assets if asset not in registered or not registered[asset].active]
        if missing:
            report.outcomes.append(DagSyncOutcome(
                dag.dag_id, item.fileloc, None,
                f"waits for unregistered asset(s) {', '.join(missing)}; register them first "
                "(`assetbus assets register NAME URI`)"))
            continue
        feeding = dag.feeds_itself(outlets.get(dag.dag_id, set()))
        warning = (f"{dag.dag_id} publishes {', '.join(feeding)}, which it also waits for: it would trigger "
                   "itself (its own events are skipped at run time as `self_trigger`)") if feeding else None
        if warning and not allow_self_trigger:
            report.outcomes.append(DagSyncOutcome(dag.dag_id, item.fileloc, None,
                                                  f"{warning}; fix the DAG or sync with --allow-self-trigger"))
            continue
        change = await upsert_dag(conn, dag.dag_id, item.fileloc, json.dumps(dag.definition()), dag.fingerprint(),
                                  dag.coalesce)
        report.outcomes.append(DagSyncOutcome(dag.dag_id, item.fileloc, change, warning=warning))
    defined = {item.dag.dag_id for item in loaded.dags}
    gone = [row.dag_id for row in await dags_under(conn, loaded.root)
            if row.active and row.dag_id not in defined and row.fileloc not in loaded.errors]
    report.deactivated = await deactivate_dags(conn, gone)
    return report
