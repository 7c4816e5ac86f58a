"""`PUT /airflow/dags/{dag_id}/rule`: the readiness rule of an Airflow DAG, registered from where Airflow parses it.

Airflow's REST API does not show a DAG's partition mappers, and managed Airflow (MWAA, Cloud Composer,
Astronomer) opens its metadata database to nobody. So the provider's cluster policy
(`assetbus.producers.airflow.policy`), which runs in Airflow's dag-processor for every DAG it parses, sends
each DAG tagged `assetbus` here: its timetable serialized as Airflow serializes it. The route translates it
(`airflow.timetables.translate_timetable`) and stores the rule with `fileloc` `airflow:<dag_id>`, inactive
while new: the bridge (or `assetbus airflow sync`) activates it when Airflow's REST API lists the DAG tagged
`assetbus`, and deactivates it when the DAG loses the tag or goes away. A rule already active changes at once.

It needs the worker credential (scope `airflow:worker`, the password of the `assetbus` connection that the
dag-processor reads). A timetable with no assetbus equivalent is refused (422 `untranslatable_timetable`,
naming what has none); a DAG id whose rule was synced from a file (`assetbus dags sync`) is not overwritten
(409 `not_an_airflow_rule`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from assetbus.consumers.airflow.declared import FILELOC_PREFIX
from assetbus.consumers.airflow.timetables import translate_timetable
from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.routes.airflow_tokens import airflow_worker
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.dags import get_dag, register_dag

router = APIRouter(prefix="/airflow", tags=["airflow"], dependencies=[Depends(version_header)])

DagId = Annotated[str, Path(min_length=1, max_length=250, pattern=r"^[A-Za-z0-9_.-]+$",
                            description="The Airflow DAG id.")]


class RuleRequest(BaseModel):
    """An Airflow DAG's schedule, as its dag-processor sees it."""

    timetable: dict[str, Any] = Field(description="The DAG's timetable serialized as Airflow serializes it "
                                      "(`airflow.serialization.encoders.encode_timetable`: `__type` and `__var`).")
    description: str = Field(default="", max_length=2000, description="The DAG's description.")


class RuleOut(BaseModel):
    """The stored rule."""

    dag_id: str = Field(description="The Airflow DAG id (and the assetbus consumer DAG id).")
    change: str = Field(description="`created`, `updated` or `unchanged`.")
    active: bool = Field(description="Whether the scheduler serves it now (a new rule waits for the bridge, or "
                         "`assetbus airflow sync`, to see the DAG tagged `assetbus` in Airflow's REST API).")
    definition: dict[str, Any] = Field(description="The rule, as `assetbus dags list` shows it.")


@router.put("/dags/{dag_id}/rule", response_model=RuleOut, responses=responses(403, 409),
            dependencies=[Depends(airflow_worker)],
            summary="Register an Airflow DAG's readiness rule from its serialized timetable (needs the worker "
            "credential; the provider's cluster policy calls it where Airflow parses DAGs)")
async def register_rule(dag_id: DagId, body: RuleRequest, db: Db) -> RuleOut:
    translation = translate_timetable(dag_id, body.timetable, description=body.description)
    if translation.dag is None:
        raise ApiError(422, ApiErrorCode.UNTRANSLATABLE_TIMETABLE,
                       f"Airflow DAG {dag_id} has no assetbus readiness rule: {translation.problem}")
    dag, fileloc = translation.dag, FILELOC_PREFIX + dag_id
    async with db.transaction() as conn:
        existing = await get_dag(conn, dag_id)
        if existing is not None and existing.fileloc != fileloc:
            raise ApiError(409, ApiErrorCode.NOT_AN_AIRFLOW_RULE,
                           f"consumer DAG {dag_id} is defined in {existing.fileloc}, not in Airflow: its rule is "
                           f"left as it is")
        change = await register_dag(conn, dag_id, fileloc, json.dumps(dag.definition()), dag.fingerprint(),
                                    dag.coalesce)
    return RuleOut(dag_id=dag_id, change=change.value, active=existing is not None and existing.active,
                   definition=dag.definition())
