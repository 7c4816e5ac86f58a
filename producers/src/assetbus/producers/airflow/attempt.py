"""Who is running: the Airflow task attempt (or DAG run) an emission is made for.

Read from Airflow's own runtime objects, never from arguments: `get_current_context()` inside a
running task, or the context Airflow passes to a callback or notifier. Outside both, for example
while the dag-processor parses a DAG file, there is no attempt and emitting is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from assetbus.producers.airflow.attestation import FINISHED_STATES
from assetbus.producers.errors import NoEmissionContext
from assetbus.schemas import AssetRef

OUTSIDE_TASK = ("asset.emit() needs a running Airflow task or callback; none is running here "
                "(is this code at the top level of a DAG file, run while the DAG is parsed?)")
IN_CALLBACK = ("asset.emit() found no running task and could not read the callback's context; in a callback, "
               "use AssetbusNotifier(asset, ...) or emit(asset, ..., context=context)")

_CALLBACK_RUNNERS = {
    ("airflow.sdk.execution_time.task_runner", "_run_task_state_change_callbacks"),
    ("airflow.dag_processing.processor", "_execute_dag_callbacks"),
    ("airflow.dag_processing.processor", "_execute_task_callbacks"),
}
"""Where Airflow 3.3 calls callbacks without a current context: each holds the context it passes to the
callback in its local `context` (task callbacks on the worker, DAG-level and task callbacks in the dag-processor)."""


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
    inlets: frozenset[AssetRef] = frozenset()
    callback: bool = False
    """A task attempt's callback (the attempt has finished): it may publish the task's inlets too."""
    store: Any = field(default=None, compare=False, repr=False)
    """The task's `task_state_store` (Airflow's channel for attested tokens); None where Airflow gives none."""

    @property
    def publishable(self) -> frozenset[AssetRef] | None:
        """What the SDK lets this attempt emit (None: whatever its token allows)."""
        if self.outlets is None and not (self.callback and self.inlets):
            return None
        return (self.outlets or frozenset()) | (self.inlets if self.callback else frozenset())

    @property
    def is_task(self) -> bool:
        return self.task_id is not None

    def request(self) -> dict[str, Any]:
        """The body of a token request for this attempt."""
        if not self.is_task:
            return {"kind": "dag", "dag_id": self.dag_id, "run_id": self.run_id}
        body: dict[str, Any] = {"kind": "task", "dag_id": self.dag_id, "run_id": self.run_id,
                                "task_id": self.task_id, "map_index": self.map_index,
                                "try_number": self.try_number, "ti_id": self.ti_id}
        if self.callback:
            body["callback"] = True
        return body

    @property
    def key(self) -> tuple[object, ...]:
        return (self.dag_id, self.run_id, self.task_id, self.map_index, self.try_number, self.ti_id, self.callback)


def asset_ref(asset: object) -> AssetRef | None:
    """The AssetRef of an Airflow `Asset` (or anything with a name and a URI); None for aliases and the like."""
    name, uri = getattr(asset, "name", None), getattr(asset, "uri", None)
    if isinstance(name, str) and isinstance(uri, str) and name and uri:
        return AssetRef(name=name, uri=uri)
    return None


def _declared(task: object, role: str) -> frozenset[AssetRef]:
    return frozenset(ref for ref in (asset_ref(a) for a in getattr(task, role, None) or []) if ref is not None)


def attempt_from_context(context: Mapping[str, Any]) -> Attempt:
    """The attempt an Airflow context (task or callback) belongs to.

    A DAG-level callback's context may hold the run's last task instance too; Airflow 3 marks it
    with a `reason` (only the dag-processor sets one), and it belongs to the DAG run.
    """
    ti = context.get("ti") or context.get("task_instance")
    dag_level = "reason" in context
    if not dag_level and ti is not None and getattr(ti, "id", None) is not None and getattr(ti, "task_id", None):
        task = getattr(ti, "task", None) or context.get("task")
        state = getattr(getattr(ti, "state", None), "value", getattr(ti, "state", None))
        return Attempt(dag_id=str(ti.dag_id), run_id=str(ti.run_id), task_id=str(ti.task_id),
                       map_index=int(getattr(ti, "map_index", -1) if ti.map_index is not None else -1),
                       try_number=int(ti.try_number), ti_id=str(ti.id), outlets=_declared(task, "outlets") or None,
                       inlets=_declared(task, "inlets"), callback=str(state) in FINISHED_STATES,
                       store=context.get("task_state_store"))
    dag_run = context.get("dag_run")
    dag_id = getattr(dag_run, "dag_id", None) or getattr(context.get("dag"), "dag_id", None)
    run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
    if dag_id and run_id:
        return Attempt(dag_id=str(dag_id), run_id=str(run_id))
    raise NoEmissionContext(OUTSIDE_TASK)


def running_attempt() -> Attempt:
    """The attempt of the Airflow task (or callback) running in this process; NoEmissionContext if there is none."""
    context = callback_context()
    if context is None and next(_runner_frames(), None) is not None:  # a callback whose context was not found
        raise NoEmissionContext(IN_CALLBACK)
    if context is None:
        try:
            from airflow.sdk import get_current_context
        except ImportError as error:  # pragma: no cover - only without Airflow
            raise NoEmissionContext("Airflow (airflow.sdk) is not installed in this environment") from error
        try:
            context = get_current_context()
        except RuntimeError as error:
            raise NoEmissionContext(OUTSIDE_TASK) from error
    return attempt_from_context(context)


def _runner_frames() -> Iterator[FrameType]:
    frame = sys._getframe(1)
    while frame is not None:
        if (frame.f_globals.get("__name__"), frame.f_code.co_name) in _CALLBACK_RUNNERS:
            yield frame
        frame = frame.f_back  # type: ignore[assignment]


def callback_context() -> Mapping[str, Any] | None:
    """The context Airflow passes to the callback running on this thread, where Airflow runs callbacks
    without a current context (Airflow 3.3: task callbacks after the task, DAG-level callbacks in the
    dag-processor); None outside a callback, or where Airflow's callback runner keeps it elsewhere."""
    for frame in _runner_frames():
        context = frame.f_locals.get("context")
        if isinstance(context, Mapping):
            return context
    return None
