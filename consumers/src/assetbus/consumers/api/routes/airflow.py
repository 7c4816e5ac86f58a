"""The routes Airflow's side calls under `/airflow/`; each needs the worker credential (scope `airflow:worker`)
or, for `/tokens`, an attestation (docs/security.md, "Identity modes" and "Tokens for Airflow attempts";
docs/airflow.md, "How the rule reaches assetbus").
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

import jwt
from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, Field, model_validator

from assetbus.consumers.airflow.attempts import FINISHED_TI, AttemptRefused, check_dag_run, check_task_attempt
from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.declared import FILELOC_PREFIX
from assetbus.consumers.airflow.errors import AirflowError
from assetbus.consumers.airflow.timetables import translate_timetable
from assetbus.consumers.airflow.workers import SCOPE_AIRFLOW_WORKER, Minter, Publish
from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.api.database import Db, app_state
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.security import Caller, CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.storage.dags import get_dag, register_dag
from assetbus.consumers.storage.revocations import revocation
from assetbus.consumers.storage.task_assets import declared_assets
from assetbus.schemas import SCOPE_AIRFLOW_ATTESTED

router = APIRouter(prefix="/airflow", tags=["airflow"], dependencies=[Depends(version_header)])


class AirflowTokenRequest(BaseModel):
    """The attempt (or DAG run) asking for a token, as the Airflow worker running it knows it."""

    kind: Literal["task", "dag"] = Field(default="task", description="`task` for a task attempt (and its "
                                         "callbacks), `dag` for a DAG-level callback.")
    dag_id: str = Field(min_length=1, max_length=250, description="DAG id.")
    run_id: str = Field(min_length=1, max_length=250, description="DAG run id.")
    task_id: str | None = Field(default=None, max_length=250, description="Task id (task tokens only).")
    map_index: int = Field(default=-1, ge=-1, description="Map index, -1 when unmapped (task tokens only).")
    try_number: int | None = Field(default=None, ge=1, description="The attempt's try number (task tokens only).")
    ti_id: UUID | None = Field(default=None, description="The task instance's UUID (`ti.id`), task tokens only.")
    callback: bool = Field(default=False, description="For the attempt's callbacks (after its task ran): the "
                           "token may publish the task's inlets as well as its outlets (task tokens only).")

    @model_validator(mode="after")
    def _task_fields(self) -> AirflowTokenRequest:
        task_fields = (self.task_id, self.try_number, self.ti_id)
        if self.kind == "task" and any(f is None for f in task_fields):
            raise ValueError("a task token request needs task_id, try_number and ti_id")
        if self.kind == "dag" and (any(f is not None for f in task_fields) or self.callback):
            raise ValueError("a DAG-run token request has no task_id, try_number, ti_id or callback")
        return self


class AirflowTokenOut(BaseModel):
    """A signed emitter token for the attempt, and where to send emissions."""

    token: str = Field(description="Bearer token; its claims name the attempt (or DAG run).")
    expires_at: datetime = Field(description="When the token expires; ask again before then.")
    bootstrap_servers: str = Field(description="Kafka bootstrap servers the API itself uses.")
    topic_prefix: str = Field(description="Topic prefix of this assetbus installation.")


async def airflow_worker(caller: CurrentCaller, db: Db) -> Caller:
    """401 without a valid bearer token, or with a revoked worker credential (`credential_revoked`); 403
    `insufficient_scope` unless it is a worker credential or an attestation."""
    if SCOPE_AIRFLOW_ATTESTED in caller.scopes:
        return caller
    caller.require(SCOPE_AIRFLOW_WORKER)
    jti = jwt.decode(caller.token, options={"verify_signature": False}).get("jti")  # verified by CurrentCaller
    async with db.statement() as conn:
        revoked = await revocation(conn, str(jti)) if jti else None
    if revoked is not None:
        raise ApiError(401, ApiErrorCode.CREDENTIAL_REVOKED,
                       f"this worker credential ({revoked.subject}) was revoked at {revoked.revoked_at.isoformat()}"
                       + (f": {revoked.reason}" if revoked.reason else ""),
                       headers={"WWW-Authenticate": 'Bearer realm="assetbus", error="invalid_token"'})
    return caller


async def airflow_of(request: Request) -> AirflowClient:
    client: AirflowClient | None = request.app.state.airflow
    if client is None:
        raise ApiError(404, ApiErrorCode.AIRFLOW_NOT_CONFIGURED,
                       "this API has no Airflow account configured (ASSETBUS_AIRFLOW_URL and its credentials)")
    return client


async def minter_of(request: Request) -> Minter:
    minter: Minter | None = request.app.state.minter
    if minter is None:
        raise ApiError(404, ApiErrorCode.AIRFLOW_NOT_CONFIGURED, "this API was started without a token minter")
    return minter


@router.post("/tokens", response_model=AirflowTokenOut, responses=responses(403, 404, 503),
             summary="Mint an emitter token for a running Airflow task attempt or DAG run (needs an attestation "
             "from AssetbusStoreBackend, or the worker credential)")
async def mint(body: AirflowTokenRequest, caller: Annotated[Caller, Depends(airflow_worker)],
               airflow: Annotated[AirflowClient, Depends(airflow_of)],
               config: Annotated[ApiConfig, Depends(app_state("config"))],
               minter: Annotated[Minter, Depends(minter_of)], db: Db) -> AirflowTokenOut:
    if SCOPE_AIRFLOW_ATTESTED in caller.scopes:
        return await _mint_attested(caller, config, minter, db)
    if body.kind == "task" and config.airflow_identity == "attested":
        raise ApiError(403, ApiErrorCode.ATTESTATION_REQUIRED,
                       "this API mints task tokens only from an attestation of Airflow's api-server (identity mode "
                       "`attested`): a task gets its token through Airflow's task_state_store, with "
                       "AssetbusStoreBackend configured there; the worker credential gets DAG-run tokens only")
    ttl = config.airflow_token_ttl_s
    try:
        if body.kind == "task":
            assert body.task_id is not None and body.try_number is not None and body.ti_id is not None
            await check_task_attempt(airflow, ti_id=body.ti_id, dag_id=body.dag_id, run_id=body.run_id,
                                     task_id=body.task_id, map_index=body.map_index, try_number=body.try_number,
                                     callback=body.callback)
            publish = await _publication(db, config, body.dag_id, body.task_id, callback=body.callback)
            token = minter.task(body.dag_id, body.run_id, body.task_id, map_index=body.map_index,
                                try_number=body.try_number, ttl_seconds=ttl, publish=publish)
        else:
            await check_dag_run(airflow, dag_id=body.dag_id, run_id=body.run_id)
            publish = await _publication(db, config, body.dag_id, None)
            token = minter.dag(body.dag_id, body.run_id, ttl_seconds=ttl, publish=publish)
    except AttemptRefused as error:
        raise ApiError(403, ApiErrorCode.ATTEMPT_NOT_RUNNING, error.reason) from error
    except AirflowError as error:
        raise ApiError(503, ApiErrorCode.AIRFLOW_UNAVAILABLE, f"cannot check the attempt with Airflow: {error}",
                       headers={"Retry-After": "2"}) from error
    return _token_out(token, ttl, config)


async def _mint_attested(caller: Caller, config: ApiConfig, minter: Minter, db: Db) -> AirflowTokenOut:
    """A token for the attempt the attestation names (never the body's), living no longer than its attempt
    allows: a running try its usual lifetime; a finished try's callbacks until its end plus the grace."""
    claims = caller.claims
    if claims.task_id is None or claims.map_index is None or claims.try_number is None:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, "an attestation names a task attempt")
    extra = jwt.decode(caller.token, options={"verify_signature": False})  # verified by `airflow_worker`
    state, ended_at = str(extra.get("ti_state")), extra.get("ended_at")
    ttl, not_after = config.airflow_attested_ttl_s, None
    callback = state in FINISHED_TI
    if callback:
        not_after = (int(ended_at) if isinstance(ended_at, int | float) else 0) + config.airflow_callback_grace_s
        left = not_after - int(time.time())
        if left <= 0:
            raise ApiError(403, ApiErrorCode.ATTEMPT_ENDED,
                           f"try {claims.try_number} of {claims.dag_id}/{claims.run_id}/{claims.task_id} ended more "
                           f"than {config.airflow_callback_grace_s}s ago (its callbacks' grace)")
        ttl = min(ttl, left)
    elif state != "running":
        raise ApiError(403, ApiErrorCode.ATTEMPT_NOT_RUNNING, f"the task instance is {state}, not running")
    publish = await _publication(db, config, claims.dag_id, claims.task_id, callback=callback)
    token = minter.task(claims.dag_id, claims.run_id, claims.task_id, map_index=claims.map_index,
                        try_number=claims.try_number, ttl_seconds=ttl, publish=publish, not_after=not_after,
                        attested=True)
    return _token_out(token, ttl, config)


def _token_out(token: str, ttl: int, config: ApiConfig) -> AirflowTokenOut:
    return AirflowTokenOut(token=token, expires_at=datetime.now(UTC) + timedelta(seconds=ttl),
                           bootstrap_servers=config.kafka.bootstrap, topic_prefix=config.topics.prefix)


async def _publication(db: Db, config: ApiConfig, dag_id: str, task_id: str | None, *,
                       callback: bool = False) -> Publish:
    """The signed `publish` claim: what Airflow declares for the task or DAG (registered by
    `assetbus airflow sync`; see `declared_assets`), or "*" when configured to allow any registered asset.

    A task's callbacks may publish its inlets too. That grants no worker anything new (a DAG-run token,
    which any worker can get for a running run, may publish every asset the DAG's tasks declare), so the
    `callback` flag is the SDK's declaration, not a proof: it keeps a task body's token to its outlets."""
    if config.airflow_publish == "any":
        return "*"
    async with db.statement() as conn:
        return await declared_assets(conn, dag_id, task_id, inlets=callback)


class WorkerKafkaOut(BaseModel):
    """What the API names to a worker with each token."""

    bootstrap_servers: str = Field(description="Kafka bootstrap servers the API itself uses.")
    topic_prefix: str = Field(description="Topic prefix of this assetbus installation.")


@router.get("/kafka", response_model=WorkerKafkaOut, responses=responses(403),
            dependencies=[Depends(airflow_worker)],
            summary="The Kafka brokers and topic prefix the API names to workers (needs the worker credential)")
async def worker_kafka(config: Annotated[ApiConfig, Depends(app_state("config"))]) -> WorkerKafkaOut:
    return WorkerKafkaOut(bootstrap_servers=config.kafka.bootstrap, topic_prefix=config.topics.prefix)


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
