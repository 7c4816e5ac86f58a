"""Who is running: the Airflow task attempt (or DAG run) an emission is made for.

Read from Airflow's own runtime objects, never from arguments: `get_current_context()` inside a
running task, or the context Airflow passes to a callback or notifier. Outside both, for example
while the dag-processor parses a DAG file, there is no attempt and emitting is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assetbus.producers.errors import NoEmissionContext
from assetbus.schemas import AssetRef

OUTSIDE_TASK = ("asset.emit() needs a running Airflow task or callback; none is running here "
                "(is this code at the top level of a DAG file, run while the DAG is parsed?)")


@dataclass(frozen=True)
class Attempt:
    """A task attempt (`ti_id` set) or, for DAG-level callbacks, a DAG run (task fields None)."""

    dag_id: str
    run_id: str
    task_id: str | None = None
    map_index: int | None = None
    try_number: int | None = None
    ti_id: str | None = None
    outlets: frozenset[AssetRef] | None = None

    @property
    def is_task(self) -> bool:
        return self.task_id is not None

    def request(self) -> dict[str, Any]:
        """The body of a token request for this attempt."""
        if not self.is_task:
            return {"kind": "dag", "dag_id": self.dag_id, "run_id": self.run_id}
        return {"kind": "task", "dag_id": self.dag_id, "run_id": self.run_id, "task_id": self.task_id,
                "map_index": self.map_index, "try_number": self.try_number, "ti_id": self.ti_id}

    @property
    def key(self) -> tuple[object, ...]:
        return (self.dag_id, self.run_id, self.task_id, self.map_index, self.try_number, self.ti_id)


def asset_ref(asset: object) -> AssetRef | None:
    """The AssetRef of an Airflow `Asset` (or anything with a name and a URI); None for aliases and the like."""
    name, uri = getattr(asset, "name", None), getattr(asset, "uri", None)
    if isinstance(name, str) and isinstance(uri, str) and name and uri:
        return AssetRef(name=name, uri=uri)
    return None


def _outlets(task: object) -> frozenset[AssetRef] | None:
    declared = [ref for ref in (asset_ref(a) for a in getattr(task, "outlets", None) or []) if ref is not None]
    return frozenset(declared) if declared else None


def attempt_from_context(context: Mapping[str, Any]) -> Attempt:
    """The attempt an Airflow context (task or callback) belongs to.

    A DAG-level callback's context may hold the run's last task instance too; Airflow 3 marks it
    with a `reason` (only the dag-processor sets one), and it belongs to the DAG run.
    """
    ti = context.get("ti") or context.get("task_instance")
    dag_level = "reason" in context
    if not dag_level and ti is not None and getattr(ti, "id", None) is not None and getattr(ti, "task_id", None):
        return Attempt(dag_id=str(ti.dag_id), run_id=str(ti.run_id), task_id=str(ti.task_id),
                       map_index=int(getattr(ti, "map_index", -1) if ti.map_index is not None else -1),
                       try_number=int(ti.try_number), ti_id=str(ti.id),
                       outlets=_outlets(getattr(ti, "task", None) or context.get("task")))
    dag_run = context.get("dag_run")
    dag_id = getattr(dag_run, "dag_id", None) or getattr(context.get("dag"), "dag_id", None)
    run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
    if dag_id and run_id:
        return Attempt(dag_id=str(dag_id), run_id=str(run_id))
    raise NoEmissionContext(OUTSIDE_TASK)


def running_attempt() -> Attempt:
    """The attempt of the Airflow task running in this process; NoEmissionContext if there is none."""
    try:
        from airflow.sdk import get_current_context
    except ImportError as error:  # pragma: no cover - only without Airflow
        raise NoEmissionContext("Airflow (airflow.sdk) is not installed in this environment") from error
    try:
        context = get_current_context()
    except RuntimeError as error:
        raise NoEmissionContext(OUTSIDE_TASK) from error
    return attempt_from_context(context)
