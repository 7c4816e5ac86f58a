"""Which asset an Airflow `AssetScope` names, and which Airflow task may act on it, from Airflow's metadata DB.

Airflow's API server hands the state store backend `AssetScope(asset_id=...)`; workers hand it a name or a
URI. assetbus keys asset state by name and opens it only to a task registered with the asset, so the
backend needs the asset's name and one task that declares it (an outlet first, else an inlet: what
`assetbus airflow sync` attaches). Both come from the session Airflow passes in, or a fresh one.
Imports Airflow only when called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class AssetAccess:
    """An asset's registered name, and the Airflow task (dag_id, task_id) the backend acts as for it."""

    name: str
    dag_id: str
    task_id: str


class AssetScopeLike(Protocol):
    asset_id: int | None
    name: str | None
    uri: str | None


class AssetLookup(Protocol):
    def __call__(self, scope: AssetScopeLike, session: Any | None) -> AssetAccess | None: ...


def _lookup(scope: AssetScopeLike, session: Any) -> AssetAccess | None:
    from airflow.models.asset import AssetModel, TaskInletAssetReference, TaskOutletAssetReference
    from sqlalchemy import select

    if scope.asset_id is not None:
        where = AssetModel.id == scope.asset_id
    elif scope.name is not None:
        where = AssetModel.name == scope.name
    else:
        where = AssetModel.uri == scope.uri
    row = session.execute(select(AssetModel.id, AssetModel.name).where(where).order_by(AssetModel.id.desc())
                          .limit(1)).first()
    if row is None:
        return None
    asset_id, name = row
    for reference in (TaskOutletAssetReference, TaskInletAssetReference):
        task = session.execute(select(reference.dag_id, reference.task_id).where(reference.asset_id == asset_id)
                               .order_by(reference.dag_id, reference.task_id).limit(1)).first()
        if task is not None:
            return AssetAccess(name=name, dag_id=task[0], task_id=task[1])
    return AssetAccess(name=name, dag_id="", task_id="")


def airflow_asset_lookup(scope: AssetScopeLike, session: Any | None) -> AssetAccess | None:
    """The asset's name and a task declaring it, from Airflow's metadata DB (None: no such asset).
    `dag_id`/`task_id` are empty when no task declares the asset."""
    if session is not None:
        return _lookup(scope, session)
    from airflow.utils.session import create_session

    with create_session() as fresh:
        return _lookup(scope, fresh)
