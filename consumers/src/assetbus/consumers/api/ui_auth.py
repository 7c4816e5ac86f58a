"""Sign-in of the operators' page with an operator token, scope `ui:read` and no provenance (docs/ui.md,
"Sign-in"), as `Authorization: Bearer <token>` or from the cookie `/ui/login` sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials

from assetbus.consumers.api.errors import ApiError, ApiErrorCode
from assetbus.consumers.api.security import Credentials
from assetbus.consumers.auth import TokenError, TokenVerifier
from assetbus.producers.tokens import TokenKey, scoped_token

SCOPE_UI_READ = "ui:read"
"""May read the operators' page and `/ui/api/*`."""
OPERATOR_TTL_SECONDS = 8 * 3600
"""An operator token lasts a working day unless told otherwise."""
COOKIE = "assetbus_ui"
LOGIN_PATH = "/ui/login"

_CHALLENGE = 'Bearer realm="assetbus-ui"'


def operator_token(key: TokenKey, name: str, *, ttl_seconds: int = OPERATOR_TTL_SECONDS) -> str:
    """A signed operator token for `name`, valid `ttl_seconds`; `key` as for `issue_token`."""
    return scoped_token(key, f"operator:{name}", SCOPE_UI_READ, ttl_seconds=ttl_seconds)


@dataclass(frozen=True)
class Operator:
    """A verified token's subject and scopes (not yet checked for `ui:read`)."""

    subject: str
    scopes: frozenset[str]
    expires_at: int


def operator_of(verifier: TokenVerifier, token: str) -> Operator:
    """The subject and scopes of a token `verifier` accepts (any kind: an operator's, a subscriber's); raises
    TokenError when it is forged, expired or malformed."""
    payload = verifier.claims(token, expired="token expired: get a new one with `assetbus token operator`")
    scope = payload.get("scope")
    return Operator(subject=str(payload["sub"]), scopes=frozenset(scope.split() if isinstance(scope, str) else ()),
                    expires_at=int(payload["exp"]))


def check_operator(verifier: TokenVerifier, token: str | None) -> Operator:
    """401 without a token or with an invalid one; 403 for a valid token without `ui:read` (an emit token)."""
    if not token:
        raise ApiError(401, ApiErrorCode.MISSING_TOKEN,
                       f"sign in at {LOGIN_PATH}, or send `Authorization: Bearer <operator token>` "
                       "(`assetbus token operator` makes one)", headers={"WWW-Authenticate": _CHALLENGE})
    try:
        found = operator_of(verifier, token)
    except TokenError as error:
        raise ApiError(401, ApiErrorCode.INVALID_TOKEN, error.reason,
                       headers={"WWW-Authenticate": f'{_CHALLENGE}, error="invalid_token"'}) from error
    if SCOPE_UI_READ not in found.scopes:
        raise ApiError(403, ApiErrorCode.INSUFFICIENT_SCOPE,
                       f"the token lacks scope {SCOPE_UI_READ!r}: the page needs an operator token "
                       "(`assetbus token operator`), not an emitter token",
                       headers={"WWW-Authenticate": f'{_CHALLENGE}, error="insufficient_scope", '
                                                    f'scope="{SCOPE_UI_READ}"'})
    return found


def presented_token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str | None:
    """The bearer token if one is sent, else the sign-in cookie."""
    return credentials.credentials if credentials is not None else request.cookies.get(COOKIE)


async def signed_in(request: Request, credentials: Credentials) -> Operator:
    """The dependency of `/ui/api/*`: the operator, from the bearer token or the cookie."""
    verifier: TokenVerifier = request.app.state.operator_verifier
    return check_operator(verifier, presented_token(request, credentials))

