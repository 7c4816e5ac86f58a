"""`POST /execution/runs/{run_id}/claim` and `.../finish`: the run ledger of downstream subscribers.

A subscriber claims a consumer run before its handler and records the outcome after it (see
`assetbus.producers.readiness`). The claim is the storage layer's one atomic UPDATE on
`consumer_runs` (`claim_run`): it answers `claimed: false` for a run that has finished, so a
re-published signal, a second subscriber process or a restarted one never handles a finished run
again. The subscriber holds a **subscriber token** (`assetbus token subscriber`): scope `runs:claim`
and a `dag_id` claim, no provenance (the persister and the state routes refuse it), signed with the
installation's minting key. It may claim and finish the runs of its own DAG only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import jwt
from fastapi import APIRouter, Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from assetbus.consumers.api.database import Db
from assetbus.consumers.api.errors import ApiError, ApiErrorCode, responses
from assetbus.consumers.api.security import bearer
from assetbus.consumers.api.ui_auth import OperatorVerifier
from assetbus.consumers.api.versioning import version_header
from assetbus.consumers.auth import TokenError
from assetbus.consumers.auth.tokens import DEFAULT_AUDIENCE
from assetbus.consumers.storage.runs import RunStatus, claim_run, finish_run, get_run
from assetbus.producers.readiness import SCOPE_RUNS_CLAIM
from assetbus.producers.tokens import TokenKey, scoped_token

router = APIRouter(prefix="/execution/runs", tags=["runs"], dependencies=[Depends(version_header)])

SUBSCRIBER_TTL_SECONDS = 30 * 24 * 3600
"""A subscriber token is a service credential: 30 days unless told otherwise (mint a new one before then)."""
SUBSCRIBER_SUBJECT = "subscriber:"
_CHALLENGE = 'Bearer realm="assetbus"'

RunId = Annotated[str, Path(min_length=1, max_length=250, description="The consumer run's id (the signal's "
                                                                      "`run_id`).")]


def subscriber_token(key: TokenKey, dag_id: str, name: str, *, ttl_seconds: int = SUBSCRIBER_TTL_SECONDS,
                     audience: str = DEFAULT_AUDIENCE) -> str:
    """A signed subscriber token for the runs of `dag_id`, subject `subscriber:<name>`; `key` as for `issue_token`."""
    return scoped_token(key, SUBSCRIBER_SUBJECT + name, SCOPE_RUNS_CLAIM, ttl_seconds=ttl_seconds, audience=audience,
                        extra_claims={"dag_id": dag_id})


@dataclass(frozen=True)
class Subscriber:
    subject: str
    dag_id: str


async def subscriber(request: Request,
                     credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Subscriber:
    """401 without a valid token; 403 unless it carries `runs:claim` and names a DAG."""
    if credentials is None:
        raise ApiError(401, ApiErrorCode.MISSING_TOKEN, "an `Authorization: Bearer <subscriber token>` header is "
                       "required (`assetbus token subscriber` makes one)", headers={"WWW-Authenticate": _CHALLENGE})
    verifier: OperatorVerifier = request.app.state.operator_verifier
    token = credentials.credentials
    try:
        verified = verifier.operator(token)  # signature, audience, expiry; any scopes
    except TokenError as error:
        raise ApiError(401, ApiErrorCode.INVALID_TOKEN, error.reason,
                       headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}) from error
    if SCOPE_RUNS_CLAIM not in verified.scopes:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, f"the token lacks scope {SCOPE_RUNS_CLAIM!r}: "
                       "claiming runs needs a subscriber token (`assetbus token subscriber`)")
    dag_id = jwt.decode(token, options={"verify_signature": False}).get("dag_id")  # verified just above
    if not isinstance(dag_id, str) or not dag_id:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, "the subscriber token names no DAG")
    return Subscriber(subject=verified.subject, dag_id=dag_id)


CurrentSubscriber = Annotated[Subscriber, Depends(subscriber)]


class ClaimRequest(BaseModel):
    consumer: str = Field(min_length=1, max_length=250, description="Who claims the run (the subscriber's "
                          "consumer name; shown by `assetbus runs list`).")


class ClaimOut(BaseModel):
    claimed: bool = Field(description="True: run the handler now. False: the run has finished: skip its signal.")
    status: RunStatus = Field(description="The run's status after this request.")
    attempts: int = Field(description="How many times the run has been claimed.")


class FinishRequest(BaseModel):
    status: Literal[RunStatus.SUCCESS, RunStatus.FAILED] = Field(description="`success`: the handler returned; "
                                                                              "`failed`: it raised.")
    detail: str | None = Field(default=None, max_length=2000, description="What failed (for `failed`).")


class FinishOut(BaseModel):
    recorded: bool = Field(description="False if the run was not running (finished already): nothing changed.")


async def _own_run(db: Db, run_id: str, caller: Subscriber) -> None:
    """404 for an unknown run, 403 for a run of another DAG than the token's."""
    async with db.statement() as conn:
        run = await get_run(conn, run_id)
    if run is None:
        raise ApiError(404, ApiErrorCode.NOT_FOUND, f"no consumer run {run_id!r}")
    if run.dag_id != caller.dag_id:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE,
                       f"the token may claim runs of DAG {caller.dag_id!r} only, not of {run.dag_id!r}")


@router.post("/{run_id}/claim", response_model=ClaimOut, responses=responses(401, 403, 404, 503),
             summary="Claim a consumer run before handling its signal (needs a subscriber token)")
async def claim(run_id: RunId, body: ClaimRequest, caller: CurrentSubscriber, db: Db) -> ClaimOut:
    await _own_run(db, run_id, caller)  # a run's DAG never changes: checking it first is race-free
    async with db.statement() as conn:
        claimed = await claim_run(conn, run_id, body.consumer)
    if claimed is not None:
        return ClaimOut(claimed=True, status=RunStatus(claimed.status), attempts=claimed.attempts)
    async with db.statement() as conn:
        run = await get_run(conn, run_id)
    assert run is not None
    return ClaimOut(claimed=False, status=RunStatus(run.status), attempts=run.attempts)


@router.post("/{run_id}/finish", response_model=FinishOut, responses=responses(401, 403, 404, 503),
             summary="Record the outcome of a claimed consumer run (needs a subscriber token)")
async def finish(run_id: RunId, body: FinishRequest, caller: CurrentSubscriber, db: Db) -> FinishOut:
    await _own_run(db, run_id, caller)
    async with db.statement() as conn:
        recorded = await finish_run(conn, run_id, RunStatus(body.status), body.detail)
    return FinishOut(recorded=recorded)
