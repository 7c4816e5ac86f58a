"""Who is calling: a verified bearer token (signature, audience, expiry), its scopes, and what it may touch (a
task token only the task instance its claims name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.auth import TokenError
from assetbus.consumers.auth.cache import CachedTokenVerifier
from assetbus.consumers.storage.state import TaskKey
from assetbus.schemas import SCOPE_EMIT, SCOPE_TASK_SELF, EmitterClaims

_CHALLENGE = 'Bearer realm="assetbus"'
bearer = HTTPBearer(auto_error=False, scheme_name="TaskToken",
                    description="An assetbus token (EdDSA/RS256 JWT checked against the JWKS; HS256 in local mode; "
                    "audience `assetbus`), e.g. from "
                    "`assetbus token issue`. Task tokens carry scope `emit ti:self`.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


__all__ = ["SCOPE_EMIT", "SCOPE_TASK_SELF", "Caller", "CurrentCaller", "authenticated", "bearer", "caller_of"]


@dataclass(frozen=True)
class Caller:
    claims: EmitterClaims
    scopes: frozenset[str]
    token: str

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE, f"the token lacks scope {scope!r}",
                           headers={"WWW-Authenticate": f'{_CHALLENGE}, error="insufficient_scope", scope="{scope}"'})

    def task(self) -> TaskKey:
        """The caller's own task instance (403 for DAG-run tokens or without `ti:self`)."""
        claims = self.claims
        if claims.task_id is None or claims.map_index is None:
            raise ApiError(403, ApiErrorCode.NOT_A_TASK_TOKEN,
                           "the token names a DAG run, not a task: task and asset state need a task token")
        self.require(SCOPE_TASK_SELF)
        return TaskKey(claims.dag_id, claims.run_id, claims.task_id, claims.map_index)

    def task_instance(self, ti_id: UUID) -> TaskKey:
        """The caller's task instance, if it is `ti_id`; 403 otherwise (another task, or a mapped sibling)."""
        own = self.task()
        if self.claims.task_instance_id() != ti_id:
            raise ApiError(403, ApiErrorCode.WRONG_TASK_INSTANCE,
                           f"the token may only touch its own task instance, not {ti_id}")
        return own


async def authenticated(request: Request, credentials: Credentials) -> Caller:
    """401 unless the request carries a valid bearer token."""
    if credentials is None:
        raise ApiError(401, ApiErrorCode.MISSING_TOKEN, "an `Authorization: Bearer <token>` header is required",
                       headers={"WWW-Authenticate": _CHALLENGE})
    return caller_of(request.app.state.verifier, credentials.credentials)


def caller_of(verifier: CachedTokenVerifier, token: str) -> Caller:
    """The caller a bearer token names; 401 `invalid_token` unless it verifies."""
    try:
        claims = verifier.verify(token).claims
    except TokenError as error:
        raise ApiError(401, error.code or ApiErrorCode.INVALID_TOKEN, error.reason,
                       headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}) from error
    return Caller(claims=claims, scopes=claims.scopes, token=token)


CurrentCaller = Annotated[Caller, Depends(authenticated)]
