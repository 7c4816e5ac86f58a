"""Minting emitter tokens: for task runners, callback runners and tests (`assetbus token issue`).

The key is a `SigningKey` (services verify with its public JWKS), a path to its PEM file, or, for local
development only, an HS256 secret string. A token names its attempt, its scopes and its publication policy;
lifetimes, `not_after` and `refresh_token`: docs/security.md.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import jwt

from assetbus.producers.errors import InvalidEmission
from assetbus.producers.signing import SigningKey
from assetbus.producers.validation import check_asset
from assetbus.schemas import ANY_ASSET, Provenance, SourceKind

DEFAULT_AUDIENCE = "assetbus"
DEFAULT_ISSUER = "assetbus"
"""The `iss` of every token assetbus mints; verifiers refuse a token without it, or with another one."""
DEFAULT_TTL_SECONDS = 15 * 60
"""Short by default: a task attempt that runs longer refreshes its token (`refresh_token`)."""
MAX_EXP_CLAIM = "max_exp"
"""Claim bounding every refresh of a token: the end of the attempt it was minted for."""

TokenKey = str | SigningKey | os.PathLike[str]
"""A `SigningKey`, a path to its PEM file, or an HS256 secret string (local development only)."""
Publication = Iterable[object] | Literal["*"]
"""Asset handles / AssetRefs / {"name", "uri"} mappings the token may publish, or "*" for any."""


def _signing(key: TokenKey) -> tuple[Any, str, dict[str, str]]:
    """(key, algorithm, headers) for PyJWT."""
    if isinstance(key, SigningKey):
        return key.private_key, key.algorithm, {"kid": key.kid}
    if isinstance(key, os.PathLike):
        return _signing(SigningKey.from_file(Path(key)))
    if not key:
        raise ValueError("a token key is required (a signing key file, or ASSETBUS_TOKEN_SECRET in local mode)")
    return key, "HS256", {}


def publication_claim(publish: Publication) -> list[dict[str, str]] | Literal["*"]:
    """The `publish` claim for a policy: "*" or the declared assets as {"name", "uri"} objects."""
    if publish == ANY_ASSET:
        return ANY_ASSET
    if isinstance(publish, str):
        raise ValueError(f'publish must be "*" or a list of assets, not {publish!r}')
    return [check_asset(item).model_dump() for item in publish]


def issue_token(
    secret: TokenKey,
    source: Provenance,
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    audience: str = DEFAULT_AUDIENCE,
    subject: str | None = None,
    scope: str = "emit ti:self",
    publish: Publication = ANY_ASSET,
    not_after: int | None = None,
    extra_claims: dict[str, object] | None = None,
    issuer: str = DEFAULT_ISSUER,
) -> str:
    """A signed token vouching for `source` (a task attempt or a DAG run) until now + ttl (and never
    after `not_after`, seconds since the epoch)."""
    key, algorithm, headers = _signing(secret)
    now = int(time.time())
    claims = source.model_dump(mode="json")
    expires = now + ttl_seconds if not_after is None else min(now + ttl_seconds, not_after)
    claims.update(iss=issuer, sub=subject or default_subject(source), aud=audience, iat=now, exp=expires,
                  jti=uuid.uuid4().hex, scope=scope, publish=publication_claim(publish))
    if not_after is not None:
        claims[MAX_EXP_CLAIM] = not_after
    claims.update(extra_claims or {})
    return jwt.encode(claims, key, algorithm=algorithm, headers=headers or None)


def scoped_token(key: TokenKey, subject: str, scope: str, *, ttl_seconds: int, audience: str = DEFAULT_AUDIENCE,
                 extra_claims: dict[str, object] | None = None, issuer: str = DEFAULT_ISSUER) -> str:
    """A signed token that names no task attempt or DAG run: a subject and its scope (an operator of the UI,
    a readiness subscriber), valid `ttl_seconds`; `key` as for `issue_token`."""
    if ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be positive")
    signing, algorithm, headers = _signing(key)
    now = int(time.time())
    claims: dict[str, object] = {"iss": issuer, "sub": subject, "aud": audience, "iat": now, "exp": now + ttl_seconds,
                                 "jti": uuid.uuid4().hex, "scope": scope, **(extra_claims or {})}
    return jwt.encode(claims, signing, algorithm=algorithm, headers=headers or None)


def task_token(secret: TokenKey, dag_id: str, run_id: str, task_id: str, *, map_index: int = -1,
               try_number: int = 1, ttl_seconds: int = DEFAULT_TTL_SECONDS, publish: Publication = ANY_ASSET,
               not_after: int | None = None, attested: bool = False) -> str:
    """Token for one task attempt; `publish` is the task's outlets (or "*"). `attested`: minted from Airflow's
    attestation of the attempt (the `attested` claim: once expired, it is refused as `attempt_ended`)."""
    source = Provenance(kind=SourceKind.TASK, dag_id=dag_id, run_id=run_id, task_id=task_id,
                        map_index=map_index, try_number=try_number)
    return issue_token(secret, source, ttl_seconds=ttl_seconds, publish=publish, not_after=not_after,
                       extra_claims={"attested": True} if attested else None)


def dag_token(secret: TokenKey, dag_id: str, run_id: str, *, ttl_seconds: int = DEFAULT_TTL_SECONDS,
              publish: Publication = ANY_ASSET, not_after: int | None = None) -> str:
    """Token for a DAG run's callbacks and notifiers (no task fields)."""
    return issue_token(secret, Provenance(kind=SourceKind.DAG, dag_id=dag_id, run_id=run_id),
                       ttl_seconds=ttl_seconds, scope="emit dag:self", publish=publish, not_after=not_after)


def refresh_token(secret: TokenKey, token: str, *, ttl_seconds: int = DEFAULT_TTL_SECONDS,
                  audience: str = DEFAULT_AUDIENCE) -> str:
    """A fresh token with the same claims, for a long task; only the minter (holding `secret`) can.

    The old token must verify with the same key and not be expired; the new one never outlives its
    `max_exp` claim. Raises InvalidEmission otherwise.
    """
    key, algorithm, headers = _signing(secret)
    verifying = key.public_key() if algorithm != "HS256" else key
    try:
        claims = jwt.decode(token, verifying, algorithms=[algorithm], audience=audience)
    except jwt.PyJWTError as error:
        raise InvalidEmission("token", f"cannot be refreshed: {error}") from error
    now = int(time.time())
    bound = claims.get(MAX_EXP_CLAIM)
    expires = now + ttl_seconds if not isinstance(bound, int) else min(now + ttl_seconds, bound)
    if expires <= now:
        raise InvalidEmission("token", "cannot be refreshed: the attempt it was minted for has ended")
    claims.update(iat=now, exp=expires, jti=uuid.uuid4().hex)
    return jwt.encode(claims, key, algorithm=algorithm, headers=headers or None)


def default_subject(source: Provenance) -> str:
    """A stable id for the token's subject: the task attempt, or the DAG run."""
    if source.kind is SourceKind.DAG:
        return f"dagrun:{source.dag_id}/{source.run_id}"
    return f"ti:{source.dag_id}/{source.run_id}/{source.task_id}/{source.map_index}/{source.try_number}"


def unverified_claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False, "verify_aud": False,
                                                        "verify_exp": False})
    return claims


def source_of(token: str) -> Provenance:
    """The provenance a token names, read without verifying the signature (the persister verifies).

    Raises InvalidEmission if the string is not a token naming a task attempt or a DAG run.
    """
    try:
        claims = unverified_claims(token)
        return Provenance.model_validate({k: claims.get(k) for k in Provenance.model_fields})
    except (jwt.PyJWTError, ValueError) as error:
        raise InvalidEmission("token", f"is not an assetbus emitter token: {error}") from error

