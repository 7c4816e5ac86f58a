"""`POST /execution/runs/{run_id}/claim`, `.../renew` and `.../finish`: the run ledger of downstream subscribers
(docs/consumer-dags.md, "The scheduler, live"), each one conditional UPDATE of `storage.runs`. The caller holds
a subscriber token (scope `runs:claim` and a `dag_id` claim); it may touch its DAG's runs only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import jwt
from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, Field

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.security import Credentials
from assetbus.consumers.api.ui_auth import operator_of
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.auth import TokenError, TokenVerifier
from assetbus.consumers.storage.runs import claim_run, finish_run, get_run, renew_run
from assetbus.producers.readiness import DEFAULT_LEASE_S, SCOPE_RUNS_CLAIM, FinishResult, RunStatus
from assetbus.producers.tokens import TokenKey, scoped_token

router = APIRouter(prefix="/execution/runs", tags=["runs"], dependencies=[Depends(version_header)])

SUBSCRIBER_TTL_SECONDS = 30 * 24 * 3600
"""A subscriber token is a service credential: 30 days unless told otherwise (mint a new one before then)."""
_CHALLENGE = 'Bearer realm="assetbus"'

RunId = Annotated[str, Path(min_length=1, max_length=250, description="The consumer run's id (the signal's "
                                                                      "`run_id`).")]


def subscriber_token(key: TokenKey, dag_id: str, name: str, *, ttl_seconds: int = SUBSCRIBER_TTL_SECONDS) -> str:
    """A signed subscriber token for the runs of `dag_id`, subject `subscriber:<name>`; `key` as for `issue_token`."""
    return scoped_token(key, f"subscriber:{name}", SCOPE_RUNS_CLAIM, ttl_seconds=ttl_seconds,
                        extra_claims={"dag_id": dag_id})


async def subscriber(request: Request, credentials: Credentials) -> str:
    """The DAG a subscriber token names: 401 without a valid token; 403 unless it carries `runs:claim` and
    names a DAG."""
    if credentials is None:
        raise ApiError(401, ApiErrorCode.MISSING_TOKEN, "an `Authorization: Bearer <subscriber token>` header is "
                       "required (`assetbus token subscriber` makes one)", headers={"WWW-Authenticate": _CHALLENGE})
    verifier: TokenVerifier = request.app.state.operator_verifier
    token = credentials.credentials
    try:
        verified = operator_of(verifier, token)  # signature, audience, expiry; any scopes
    except TokenError as error:
        raise ApiError(401, ApiErrorCode.INVALID_TOKEN, error.reason,
                       headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}) from error
    if SCOPE_RUNS_CLAIM not in verified.scopes:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, f"the token lacks scope {SCOPE_RUNS_CLAIM!r}: "
                       "claiming runs needs a subscriber token (`assetbus token subscriber`)")
    dag_id = jwt.decode(token, options={"verify_signature": False}).get("dag_id")  # verified just above
    if not isinstance(dag_id, str) or not dag_id:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, "the subscriber token names no DAG")
    return dag_id


SubscriberDag = Annotated[str, Depends(subscriber)]


LeaseSeconds = Annotated[float, Field(ge=1, le=86400, description="How long the claim holds the run unless renewed "
                                      "(seconds): the longest a crashed holder keeps the run from others.")]
Fence = Annotated[int, Field(ge=1, description="The fencing token the claim returned (`fence`).")]


class ClaimRequest(BaseModel):
    consumer: str = Field(min_length=1, max_length=250, description="Who claims the run (the subscriber's "
                          "consumer name; shown by `assetbus runs list`).")
    lease_s: LeaseSeconds = DEFAULT_LEASE_S


class ClaimOut(BaseModel):
    claimed: bool = Field(description="True: run the handler now, renewing the lease. False: the run has finished "
                                      "(skip its signal), or another holder's lease is live (`status` running: "
                                      "claim again later).")
    status: RunStatus = Field(description="The run's status after this request.")
    attempts: int = Field(description="How many times the run has been claimed.")
    fence: int | None = Field(default=None, description="When claimed: the fencing token of this claim, to pass "
                                                        "to `renew` and `finish`.")
    lease_until: datetime | None = Field(default=None, description="When the holder's lease expires unless "
                                                                   "renewed (a running run).")


class RenewRequest(BaseModel):
    fence: Fence
    lease_s: LeaseSeconds = DEFAULT_LEASE_S


class RenewOut(BaseModel):
    renewed: bool = Field(description="False: the fence no longer holds the run (another claim took it after the "
                                      "lease expired, or it finished): the holder has lost it.")
    lease_until: datetime | None = Field(default=None, description="The lease's new expiry, when renewed.")


class FinishRequest(BaseModel):
    status: Literal[RunStatus.SUCCESS, RunStatus.FAILED] = Field(description="`success`: the handler returned; "
                                                                              "`failed`: it raised.")
    detail: str | None = Field(default=None, max_length=2000, description="What failed (for `failed`).")
    fence: Fence | None = Field(default=None, description="The claim's fencing token: the outcome is refused unless "
                                "that claim still holds the run. Absent (clients from before leases): recorded if "
                                "the run is running, whoever holds it.")


class FinishOut(BaseModel):
    recorded: bool = Field(description="False: nothing changed (see `reason`).")
    reason: FinishResult | None = Field(default=None, description="Why not recorded: `stale_fence`, the fence no "
                                        "longer holds the run (its lease expired and another claim took it), or the "
                                        "run is not running (finished already).")


async def _own_run(db: Db, run_id: str, dag_id: str) -> None:
    """404 for an unknown run, 403 for a run of another DAG than the token's."""
    async with db.statement() as conn:
        run = await get_run(conn, run_id)
    if run is None:
        raise ApiError(404, ApiErrorCode.NOT_FOUND, f"no consumer run {run_id!r}")
    if run.dag_id != dag_id:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE,
                       f"the token may claim runs of DAG {dag_id!r} only, not of {run.dag_id!r}")


@router.post("/{run_id}/claim", response_model=ClaimOut, responses=responses(401, 403, 404, 503),
             summary="Claim (lease) a consumer run before handling its signal (needs a subscriber token)")
async def claim(run_id: RunId, body: ClaimRequest, dag_id: SubscriberDag, db: Db) -> ClaimOut:
    await _own_run(db, run_id, dag_id)  # a run's DAG never changes: checking it first is race-free
    async with db.statement() as conn:
        found = await claim_run(conn, run_id, body.consumer, body.lease_s)
    if found is None:
        raise ApiError(404, ApiErrorCode.NOT_FOUND, f"no consumer run {run_id!r}")
    run = found.run
    return ClaimOut(claimed=found.claimed, status=RunStatus(run.status), attempts=run.attempts,
                    fence=run.attempts if found.claimed else None, lease_until=run.lease_until)


@router.post("/{run_id}/renew", response_model=RenewOut, responses=responses(401, 403, 404, 503),
             summary="Extend the lease of a claimed consumer run while its handler runs (needs a subscriber token)")
async def renew(run_id: RunId, body: RenewRequest, dag_id: SubscriberDag, db: Db) -> RenewOut:
    await _own_run(db, run_id, dag_id)
    async with db.statement() as conn:
        lease_until = await renew_run(conn, run_id, body.fence, body.lease_s)
    return RenewOut(renewed=lease_until is not None, lease_until=lease_until)


@router.post("/{run_id}/finish", response_model=FinishOut, responses=responses(401, 403, 404, 503),
             summary="Record the outcome of a claimed consumer run (needs a subscriber token)")
async def finish(run_id: RunId, body: FinishRequest, dag_id: SubscriberDag, db: Db) -> FinishOut:
    await _own_run(db, run_id, dag_id)
    async with db.statement() as conn:
        recorded = await finish_run(conn, run_id, RunStatus(body.status), body.detail, fence=body.fence)
    return FinishOut(recorded=recorded, reason=None if recorded else FinishResult.STALE_FENCE)
