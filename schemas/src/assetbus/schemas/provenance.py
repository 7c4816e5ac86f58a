"""Who emitted: a task attempt or a DAG run. Taken from the signed token, never from free text."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assetbus.schemas.compat import StrEnum


class SourceKind(StrEnum):
    """The kind of emitter."""

    TASK = "task"
    """A running task attempt (or a task-level callback of it)."""
    DAG = "dag"
    """A DAG-run-level callback or notifier; it has no task fields."""


class Provenance(BaseModel):
    """The emitter of an event: the DAG run, and for task emitters the task attempt."""

    model_config = ConfigDict(frozen=True)

    kind: SourceKind = Field(description="Whether a task attempt or a DAG run emitted.")
    dag_id: str = Field(min_length=1, max_length=250, description="DAG of the emitting run.")
    run_id: str = Field(min_length=1, max_length=250, description="DAG run that emitted.")
    task_id: str | None = Field(default=None, max_length=250, description="Task id; null for DAG-level.")
    map_index: int | None = Field(default=None, ge=-1,
                                  description="Map index (-1 when unmapped); null for DAG-level.")
    try_number: int | None = Field(default=None, ge=1, description="Task attempt number; null for DAG-level.")

    @model_validator(mode="after")
    def _task_fields_match_kind(self) -> Provenance:
        if not task_fields_match_kind(self.kind, (self.task_id, self.map_index, self.try_number)):
            raise ValueError("a task source needs task_id, map_index and try_number" if self.kind is SourceKind.TASK
                             else "a DAG source has no task_id, map_index or try_number")
        return self

    def dedupe_scope(self) -> str:
        """The scope an explicit dedupe key lives in: the task (all its tries), or the DAG run."""
        task = self.task_id if self.task_id is not None else ""
        index = self.map_index if self.map_index is not None else ""
        return f"{self.dag_id}\x1f{self.run_id}\x1f{task}\x1f{index}"


_TASK = SourceKind.TASK.value


def task_fields_match_kind(kind: str, task_fields: tuple[str | None, int | None, int | None]) -> bool:
    """The one rule of a source (the model's validator, and the fast decoders'): a task source carries all
    task fields, a DAG source none."""
    return None not in task_fields if kind == _TASK else task_fields == (None, None, None)


TASK_INSTANCE_NAMESPACE = uuid.UUID("6f1c3e52-8a43-4f0e-9b8e-2a54b7d1c0a1")


def task_instance_id(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> uuid.UUID:
    """The task instance's id (`ti_id` in the execution API): the same for every try of it."""
    return uuid.uuid5(TASK_INSTANCE_NAMESPACE, f"{dag_id}\x1f{run_id}\x1f{task_id}\x1f{map_index}")
