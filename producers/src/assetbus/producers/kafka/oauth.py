"""SASL/OAUTHBEARER token providers for aiokafka: a generic OIDC client-credentials provider and MSK IAM. They
cache and refresh the token as docs/kafka.md, "Tokens and their refresh", tells, one provider per set of settings
serving a whole process. A fault names the setting to check in one line; secrets never show in a message.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError

from assetbus.producers.kafka.errors import KafkaToolkitError

if TYPE_CHECKING:  # httpx and PyJWT are imported on the first token request: the services start without them
    import httpx

__all__ = ["CREDENTIALS_SETTINGS", "DEFAULT_LIFETIME_S", "REFRESH_FRACTION", "CachingTokenProvider",
           "ClientCredentialsTokenProvider", "MskIamTokenProvider", "OAuthCredentialsRefused", "OAuthError",
           "OAuthTokenUnavailable", "client_credentials_provider", "msk_iam_provider"]

log = logging.getLogger(__name__)

REFRESH_FRACTION = 0.8
"""A token is replaced once this fraction of its lifetime has passed (Kafka's Java client uses the same)."""
DEFAULT_LIFETIME_S = 300.0
"""Lifetime assumed for a token whose response gives neither `expires_in` nor a JWT `exp` claim."""
CREDENTIALS_SETTINGS = "KAFKA_SASL_OAUTH_CLIENT_ID / KAFKA_SASL_OAUTH_CLIENT_SECRET"
EXIT_CREDENTIALS_REFUSED = 77
"""Exit code of a command stopped by refused credentials (sysexits EX_NOPERM, as for a missing ACL)."""


class OAuthError(KafkaToolkitError):
    """A token could not be obtained; `str()` is one line naming the setting to check."""


class OAuthCredentialsRefused(OAuthError):
    """The identity provider refused the client's credentials (or scope, or request): waiting will not help, so
    a service stops at start-up."""

    exit_code = EXIT_CREDENTIALS_REFUSED


class OAuthTokenUnavailable(OAuthError, KafkaConnectionError):  # type: ignore[misc]  # aiokafka is untyped
    """The token endpoint could not be reached or failed (5xx, 429, a network fault): retriable. A
    `KafkaConnectionError`, so aiokafka handles it like a broker it cannot reach."""

    retriable = True


class CachingTokenProvider(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka is untyped
    """The cache and refresh shared by the providers: subclasses fetch `(token, lifetime in seconds)`."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._token: str | None = None
        self._refresh_at = 0.0
        self._expires_at = 0.0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary())

    async def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError

    async def token(self) -> str:
        if self._token is not None and self._clock() < self._refresh_at:
            return self._token
        # one fetch at a time: the clients that connect together share it (a lock per event loop of the process)
        async with self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
            now = self._clock()
            if self._token is not None and now < self._refresh_at:
                return self._token
            try:
                token, lifetime_s = await self._fetch()
            except OAuthTokenUnavailable as error:
                if self._token is not None and now < self._expires_at:
                    log.warning("refreshing the Kafka OAuth token failed, the current one is valid for %.0fs: %s",
                                self._expires_at - now, error)
                    return self._token
                raise
            lifetime_s = max(lifetime_s, 1.0)
            self._token = token
            self._refresh_at = now + REFRESH_FRACTION * lifetime_s
            self._expires_at = now + lifetime_s
            return token


class ClientCredentialsTokenProvider(CachingTokenProvider):
    """OAuth 2.0 client credentials (RFC 6749 §4.4) against any OIDC provider's token endpoint.

    The client authenticates with HTTP Basic (`client_secret_basic`, as Kafka's Java client does);
    `scope` is sent when set; `extensions` are the SASL extensions sent with the token (Confluent
    Cloud's `logicalCluster` and `identityPoolId`)."""

    def __init__(self, token_url: str, client_id: str, client_secret: str, *, scope: str | None = None,
                 extensions: Mapping[str, str] | None = None, timeout_s: float = 15.0,
                 verify: str | bool = True, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock=clock)
        self.token_url = token_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.scope = scope
        self._extensions = dict(extensions or {})
        self._timeout_s = timeout_s
        self._verify = verify
        self._transport = transport

    def __repr__(self) -> str:
        return f"ClientCredentialsTokenProvider({self.token_url!r}, client_id={self.client_id!r})"

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    async def _fetch(self) -> tuple[str, float]:
        import httpx

        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        pair = f"{quote(self.client_id, safe='')}:{quote(self._client_secret, safe='')}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(pair).decode(), "Accept": "application/json"}
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s, verify=self._verify,
                                         transport=self._transport) as http:
                response = await http.post(self.token_url, data=form, headers=headers)
        except httpx.HTTPError as error:
            why = f"{type(error).__name__}: {error}"
            raise OAuthTokenUnavailable(f"the OAuth token endpoint {self.token_url} is unreachable ({why}); "
                                        "check KAFKA_SASL_OAUTH_TOKEN_URL") from error
        return self._read(response)

    def _read(self, response: httpx.Response) -> tuple[str, float]:
        status = response.status_code
        try:
            body: Any = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        code = str(body.get("error") or f"HTTP {status}")
        if status >= 500 or status == 429:
            raise OAuthTokenUnavailable(f"the OAuth token endpoint {self.token_url} failed ({code}); "
                                        "the Kafka clients retry")
        if status in (401, 403) or code in ("invalid_client", "unauthorized_client", "access_denied"):
            raise OAuthCredentialsRefused(f"the OAuth token endpoint refused the client credentials ({code}): "
                                          f"check {CREDENTIALS_SETTINGS}")
        if code == "invalid_scope":
            raise OAuthCredentialsRefused(f"the OAuth token endpoint refused the scope {self.scope!r} ({code}): "
                                          "check KAFKA_SASL_OAUTH_SCOPE")
        if status >= 400:
            raise OAuthCredentialsRefused(f"the OAuth token endpoint {self.token_url} refused the token request "
                                          f"({code}): check KAFKA_SASL_OAUTH_TOKEN_URL")
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise OAuthCredentialsRefused(f"the answer of the OAuth token endpoint {self.token_url} has no "
                                          "access_token: check KAFKA_SASL_OAUTH_TOKEN_URL")
        return token, _lifetime(token, body.get("expires_in"))


def _lifetime(token: str, expires_in: object) -> float:
    """Seconds the token lives: `expires_in` when given, else the JWT's `exp`, else `DEFAULT_LIFETIME_S`."""
    import jwt

    if isinstance(expires_in, int | float | str):
        try:
            return float(expires_in)
        except ValueError:
            pass
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return DEFAULT_LIFETIME_S
    exp = claims.get("exp")
    return float(exp) - time.time() if isinstance(exp, int | float) else DEFAULT_LIFETIME_S


class MskIamTokenProvider(CachingTokenProvider):
    """Amazon MSK IAM: a SigV4-signed token from `aws-msk-iam-sasl-signer-python` (the `assetbus-sdk[msk]`
    extra), with the credentials of the default AWS chain, a profile, or an assumed role."""

    def __init__(self, region: str, *, profile: str | None = None, role_arn: str | None = None,
                 signer: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock=clock)
        self.region = region
        self.profile = profile
        self.role_arn = role_arn
        self._signer = signer

    def __repr__(self) -> str:
        return f"MskIamTokenProvider(region={self.region!r})"

    def signer(self) -> Any:
        if self._signer is None:
            try:
                from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # type: ignore[import-not-found,unused-ignore]
            except ImportError as error:
                raise OAuthCredentialsRefused("KAFKA_SASL_OAUTH_PROVIDER=aws-msk-iam needs the MSK IAM signer: "
                                              "pip install 'assetbus-sdk[msk]'") from error
            self._signer = MSKAuthTokenProvider
        return self._signer

    def _generate(self) -> tuple[str, int]:
        signer = self.signer()
        if self.role_arn:
            return signer.generate_auth_token_from_role_arn(self.region, self.role_arn)  # type: ignore[no-any-return]
        if self.profile:
            return signer.generate_auth_token_from_profile(self.region, self.profile)  # type: ignore[no-any-return]
        return signer.generate_auth_token(self.region)  # type: ignore[no-any-return]

    async def _fetch(self) -> tuple[str, float]:
        self.signer()  # a missing extra is refused before any thread starts
        try:
            token, expiry_ms = await asyncio.get_running_loop().run_in_executor(None, self._generate)
        except OAuthError:
            raise
        except Exception as error:  # botocore raises many types; a missing credential is the usual one
            raise OAuthCredentialsRefused(f"cannot sign an MSK IAM token in {self.region} "
                                          f"({type(error).__name__}: {error}): check the AWS credentials "
                                          "(AWS_PROFILE, AWS_ROLE_ARN, the instance role) and "
                                          "KAFKA_SASL_OAUTH_AWS_REGION") from error
        return token, expiry_ms / 1000 - time.time()


@functools.lru_cache(maxsize=32)
def client_credentials_provider(token_url: str, client_id: str, client_secret: str, scope: str | None,
                                extensions: tuple[tuple[str, str], ...], verify: str | bool) -> (
        ClientCredentialsTokenProvider):
    """The process's one provider for these settings (shared by all clients, so one token is fetched)."""
    return ClientCredentialsTokenProvider(token_url, client_id, client_secret, scope=scope,
                                          extensions=dict(extensions), verify=verify)


@functools.lru_cache(maxsize=32)
def msk_iam_provider(region: str, profile: str | None, role_arn: str | None) -> MskIamTokenProvider:
    return MskIamTokenProvider(region, profile=profile, role_arn=role_arn)
