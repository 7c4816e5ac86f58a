"""Emitter token verification: EdDSA/RS256 against public keys (JWKS, by `kid`); HS256 only with a
local-development secret. Audience-checked; `alg=none` and unknown algorithms refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jwt
from pydantic import ValidationError

from assetbus.consumers.auth.keys import ASYMMETRIC_ALGORITHMS, KeyNotFound, KeySource, key_source
from assetbus.consumers.errors import ConsumerError
from assetbus.schemas import EmitterClaims

DEFAULT_AUDIENCE = "assetbus"
DEFAULT_ISSUER = "assetbus"
"""The `iss` every token must carry (what assetbus's minters write)."""
SIGNATURE_INVALID = (
    "token signature is invalid: the key that signed it is not the one verifying it. The signer (`assetbus token "
    "issue`, the task runner) uses ASSETBUS_TOKEN_SIGNING_KEY (with ASSETBUS_TOKEN_KEY_ID), or ASSETBUS_TOKEN_SECRET "
    "in local mode; the verifier (persister, API) uses the public keys of ASSETBUS_TOKEN_JWKS, or its own "
    "ASSETBUS_TOKEN_SECRET (local mode: the secret `assetbus infra up` keeps in $ASSETBUS_HOME). Publish the "
    "signing key's public half in the JWKS, or give both sides the same secret.")
"""The reason of a forged token, or one signed with another installation's key: it says where each key lives."""


ATTEMPT_ENDED = "attempt_ended"
"""The code of an expired token minted from Airflow's attestation: its attempt ended (plus the grace)."""
ATTEMPT_ENDED_REASON = ("the token's Airflow attempt ended (past its callbacks' grace) before it was used: "
                        "an attested token lives no longer than its attempt")


class TokenError(ConsumerError):
    """The token is missing, forged, expired or malformed; `reason` is safe to send back. `code` names a
    refusal more precise than the default (`attempt_ended`), or is None."""

    def __init__(self, reason: str, *, code: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class MissingVerificationKeys(ConsumerError, ValueError):
    """A service was configured with neither a JWKS nor a local-development secret."""


@dataclass(frozen=True)
class TokenVerifier:
    """Checks signature, expiry and audience, and returns the claims as a typed model: `keys` (a JWKS source)
    verifies EdDSA and RS256 tokens by their `kid`, `secret` (local development only) HS256 ones."""

    secret: str | None = field(default=None, repr=False)
    audience: str = DEFAULT_AUDIENCE
    leeway_seconds: int = 5
    keys: KeySource | None = None

    def __post_init__(self) -> None:
        if not self.secret and self.keys is None:
            raise MissingVerificationKeys("no token verification keys: configure a JWKS (file or URL), or an "
                                          "HS256 secret for local development")

    @classmethod
    def configured(cls, *, jwks: str | None, secret: str | None) -> TokenVerifier:
        """From service settings: a JWKS file path or URL, and/or a local HS256 secret."""
        return cls(secret=secret or None, keys=key_source(jwks) if jwks else None)

    @property
    def algorithms(self) -> tuple[str, ...]:
        return (*(ASYMMETRIC_ALGORITHMS if self.keys else ()), *(("HS256",) if self.secret else ()))

    def _key(self, token: str) -> tuple[Any, str]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise TokenError(f"token is invalid: {error}") from error
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise TokenError(f"token algorithm {algorithm!r} is not accepted (accepted: "
                             f"{', '.join(self.algorithms)})")
        if algorithm == "HS256":
            return self.secret, algorithm
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenError("token has no key id (kid)")
        assert self.keys is not None
        try:
            jwk = self.keys.key(kid)
        except KeyNotFound as error:
            raise TokenError(f"token key is unknown: {error}") from error
        if jwk.algorithm_name != algorithm:
            raise TokenError(f"token algorithm {algorithm!r} does not match its key")
        return jwk.key, algorithm

    def claims(self, token: str, *, expired: str = "token expired") -> dict[str, Any]:
        """The claims of a token these keys signed for this audience, not expired (any kind of token: an
        emitter's, an operator's, a subscriber's, a worker's); raises TokenError, with `expired` as the
        reason for an expired one."""
        key, algorithm = self._key(token)
        try:
            payload: dict[str, Any] = jwt.decode(token, key, algorithms=[algorithm], audience=self.audience,
                                                 issuer=DEFAULT_ISSUER, leeway=self.leeway_seconds,
                                                 options={"require": ["exp", "sub", "aud", "iss"]})
        except jwt.ExpiredSignatureError as error:  # the signature verified: the claims are the signer's
            if jwt.decode(token, options={"verify_signature": False}).get("attested") is True:
                raise TokenError(ATTEMPT_ENDED_REASON, code=ATTEMPT_ENDED) from error
            raise TokenError(expired) from error
        except jwt.InvalidAudienceError as error:
            raise TokenError("token audience is not assetbus") from error
        except jwt.InvalidIssuerError as error:
            raise TokenError(f"token issuer is not {DEFAULT_ISSUER!r}") from error
        except jwt.InvalidSignatureError as error:
            raise TokenError(SIGNATURE_INVALID) from error
        except jwt.PyJWTError as error:
            raise TokenError(f"token is invalid: {error}") from error
        return payload

    def verify(self, token: str) -> EmitterClaims:
        """An emitter token's claims (a task attempt or a DAG run); raises TokenError otherwise."""
        payload = self.claims(token)
        try:
            return EmitterClaims.model_validate(payload)
        except ValidationError as error:
            raise TokenError(f"token claims are malformed: {error.error_count()} error(s)") from error
