"""Emitter token verification (JWT, HS256 by default, audience-checked)."""

from __future__ import annotations

from dataclasses import dataclass, field

import jwt
from pydantic import ValidationError

from assetbus.schemas import EmitterClaims

DEFAULT_AUDIENCE = "assetbus"
SIGNATURE_INVALID = (
    "token signature is invalid: the key that signed it differs from the key verifying it. The verifier "
    "(persister, API) takes ASSETBUS_TOKEN_SECRET from its environment or .env; the signer (`assetbus token "
    "issue`, the task runner) takes its own ASSETBUS_TOKEN_SECRET; where it is unset, each machine uses a key "
    "generated into $ASSETBUS_HOME/token-secret (~/.cache/assetbus/token-secret). Give both the same secret.")
"""The reason of a forged token, or one signed with another installation's key: it says where each key lives."""


class TokenError(Exception):
    """The token is missing, forged, expired or malformed; `reason` is safe to send back."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class TokenVerifier:
    """Checks signature, expiry and audience, and returns the claims as a typed model."""

    secret: str = field(repr=False)
    audience: str = DEFAULT_AUDIENCE
    algorithms: tuple[str, ...] = ("HS256",)
    leeway_seconds: int = 5

    def verify(self, token: str) -> EmitterClaims:
        try:
            payload = jwt.decode(token, self.secret, algorithms=list(self.algorithms), audience=self.audience,
                                 leeway=self.leeway_seconds, options={"require": ["exp", "sub", "aud"]})
        except jwt.ExpiredSignatureError as error:
            raise TokenError("token expired") from error
        except jwt.InvalidAudienceError as error:
            raise TokenError("token audience is not assetbus") from error
        except jwt.InvalidSignatureError as error:
            raise TokenError(SIGNATURE_INVALID) from error
        except jwt.PyJWTError as error:
            raise TokenError(f"token is invalid: {error}") from error
        try:
            return EmitterClaims.model_validate(payload)
        except ValidationError as error:
            raise TokenError(f"token claims are malformed: {error.error_count()} error(s)") from error
