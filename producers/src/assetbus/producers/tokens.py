"""Minting emitter tokens: for task runners, callback runners and tests (`assetbus token issue`)."""

from __future__ import annotations

import time
import uuid

import jwt

from assetbus.producers.errors import InvalidEmission
from assetbus.schemas import Provenance, SourceKind

DEFAULT_AUDIENCE = "assetbus"
DEFAULT_TTL_SECONDS = 24 * 3600


def issue_token(
    secret: str,
    source: Provenance,
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    audience: str = DEFAULT_AUDIENCE,
    subject: str | None = None,
    scope: str = "emit ti:self",
    extra_claims: dict[str, object] | None = None,
) -> str:
    """A signed token vouching for `source` (a task attempt or a DAG run) until now + ttl."""
    if not secret:
        raise ValueError("a token secret is required (set ASSETBUS_TOKEN_SECRET)")
    now = int(time.time())
    claims = source.model_dump(mode="json")
    claims.update(
        sub=subject or default_subject(source),
        aud=audience,
        iat=now,
        exp=now + ttl_seconds,
        jti=uuid.uuid4().hex,
        scope=scope,
    )
    claims.update(extra_claims or {})
    return jwt.encode(claims, secret, algorithm="HS256")


def task_token(secret: str, dag_id: str, run_id: str, task_id: str, *, map_index: int = -1,
               try_number: int = 1, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> str:
    """Token for one task attempt."""
    source = Provenance(kind=SourceKind.TASK, dag_id=dag_id, run_id=run_id, task_id=task_id,
                        map_index=map_index, try_number=try_number)
    return issue_token(secret, source, ttl_seconds=ttl_seconds)


def dag_token(secret: str, dag_id: str, run_id: str, *, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> str:
    """Token for a DAG run's callbacks and notifiers (no task fields)."""
    return issue_token(secret, Provenance(kind=SourceKind.DAG, dag_id=dag_id, run_id=run_id),
                       ttl_seconds=ttl_seconds, scope="emit dag:self")


def default_subject(source: Provenance) -> str:
    """A stable id for the token's subject: the task attempt, or the DAG run."""
    if source.kind is SourceKind.DAG:
        return f"dagrun:{source.dag_id}/{source.run_id}"
    return f"ti:{source.dag_id}/{source.run_id}/{source.task_id}/{source.map_index}/{source.try_number}"


def source_of(token: str) -> Provenance:
    """The provenance a token names, read without verifying the signature (the persister verifies).

    Raises InvalidEmission if the string is not a token naming a task attempt or a DAG run.
    """
    try:
        claims = jwt.decode(token, options={"verify_signature": False, "verify_aud": False, "verify_exp": False})
        return Provenance.model_validate({k: claims.get(k) for k in Provenance.model_fields})
    except (jwt.PyJWTError, ValueError) as error:
        raise InvalidEmission("token", f"is not an assetbus emitter token: {error}") from error


def token_expiry(token: str) -> int | None:
    """The token's `exp` claim (seconds since the epoch), read without verifying; None if absent."""
    claims = jwt.decode(token, options={"verify_signature": False, "verify_aud": False, "verify_exp": False})
    exp = claims.get("exp")
    return int(exp) if isinstance(exp, int | float) else None
