"""OAUTHBEARER token providers: the client-credentials request, the cache and its refresh before expiry, one line
naming the setting for refused credentials, and the wiring from `KAFKA_SASL_OAUTH_*` settings to aiokafka's
`sasl_oauth_token_provider` (OIDC and MSK IAM). The token endpoint is an in-process httpx transport."""

from __future__ import annotations

import base64
import re
import sys
import time
from typing import ClassVar
from urllib.parse import parse_qs

import httpx
import jwt
import pytest
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError

from assetbus.producers.kafka import (
    ClientCredentialsTokenProvider,
    KafkaConnection,
    MskIamTokenProvider,
    OAuthCredentialsRefused,
    OAuthTokenUnavailable,
)

URL = "https://idp.example.com/oauth2/token"
SECRET = "s3cr3t/with:specials"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Endpoint:
    """A token endpoint: checks the Basic credentials, answers `expires_in` seconds tokens, counts requests."""

    def __init__(self, expires_in: int | None = 100, status: int = 200) -> None:
        self.expires_in = expires_in
        self.status = status
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": "server_error"})
        scheme, _, encoded = request.headers["authorization"].partition(" ")
        client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        if scheme != "Basic" or client_id != "assetbus" or secret != "s3cr3t%2Fwith%3Aspecials":
            return httpx.Response(401, json={"error": "invalid_client", "error_description": "bad secret"})
        body: dict[str, str | int] = {"access_token": f"token-{len(self.requests)}", "token_type": "Bearer"}
        if self.expires_in is not None:
            body["expires_in"] = self.expires_in
        return httpx.Response(200, json=body)


def provider(endpoint: Endpoint, clock: Clock, secret: str = SECRET,
             **options: object) -> ClientCredentialsTokenProvider:
    return ClientCredentialsTokenProvider(URL, "assetbus", secret, transport=httpx.MockTransport(endpoint),
                                          clock=clock, **options)  # type: ignore[arg-type]


async def test_the_token_is_asked_with_client_credentials_and_reused_until_refreshed_before_expiry() -> None:
    endpoint, clock = Endpoint(expires_in=100), Clock()
    tokens = provider(endpoint, clock, scope="kafka.write")
    assert isinstance(tokens, AbstractTokenProvider)
    assert await tokens.token() == "token-1"
    form = parse_qs(endpoint.requests[0].content.decode())
    assert form == {"grant_type": ["client_credentials"], "scope": ["kafka.write"]}
    assert endpoint.requests[0].method == "POST" and str(endpoint.requests[0].url) == URL
    clock.now += 79  # before 80% of the lifetime: the cached token
    assert await tokens.token() == "token-1" and len(endpoint.requests) == 1
    clock.now += 2  # past 80%, still 19s before expiry: a new one
    assert await tokens.token() == "token-2" and len(endpoint.requests) == 2


async def test_a_failed_refresh_keeps_the_valid_token_and_fails_once_it_has_expired() -> None:
    endpoint, clock = Endpoint(expires_in=100), Clock()
    tokens = provider(endpoint, clock)
    assert await tokens.token() == "token-1"
    endpoint.status = 503
    clock.now += 90
    assert await tokens.token() == "token-1"
    clock.now += 11
    with pytest.raises(OAuthTokenUnavailable, match="failed \\(server_error\\); the Kafka clients retry") as caught:
        await tokens.token()
    assert isinstance(caught.value, KafkaConnectionError) and caught.value.retriable


async def test_a_wrong_secret_is_one_line_naming_the_settings_without_the_secret() -> None:
    tokens = provider(Endpoint(), Clock(), secret="not-the-secret")
    with pytest.raises(OAuthCredentialsRefused) as caught:
        await tokens.token()
    assert str(caught.value) == ("the OAuth token endpoint refused the client credentials (invalid_client): "
                                 "check KAFKA_SASL_OAUTH_CLIENT_ID / KAFKA_SASL_OAUTH_CLIENT_SECRET")
    assert not caught.value.retriable and caught.value.exit_code == 77
    assert "not-the-secret" not in repr(tokens)


async def test_an_unreachable_endpoint_names_the_token_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    tokens = ClientCredentialsTokenProvider(URL, "assetbus", SECRET, transport=httpx.MockTransport(refuse))
    with pytest.raises(OAuthTokenUnavailable, match="check KAFKA_SASL_OAUTH_TOKEN_URL"):
        await tokens.token()


async def test_without_expires_in_the_lifetime_is_the_jwt_exp() -> None:
    clock = Clock()
    access = jwt.encode({"sub": "assetbus", "exp": int(time.time()) + 50}, "k" * 32, algorithm="HS256")

    asked: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(200, json={"access_token": access})

    tokens = ClientCredentialsTokenProvider(URL, "assetbus", SECRET, transport=httpx.MockTransport(answer), clock=clock)
    await tokens.token()
    clock.now += 35  # 70% of 50s: cached
    await tokens.token()
    clock.now += 10  # 90%: refreshed
    await tokens.token()
    assert len(asked) == 2


OAUTH_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "pkc-1.confluent.cloud:9092", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
             "KAFKA_SASL_MECHANISM": "OAUTHBEARER", "KAFKA_SASL_OAUTH_TOKEN_URL": URL,
             "KAFKA_SASL_OAUTH_CLIENT_ID": "assetbus", "KAFKA_SASL_OAUTH_CLIENT_SECRET": SECRET,
             "KAFKA_SASL_OAUTH_SCOPE": "kafka",
             "KAFKA_SASL_OAUTH_EXTENSIONS": "logicalCluster=lkc-1;identityPoolId=pool-2"}


def test_oauthbearer_settings_give_every_client_one_shared_provider_and_no_plain_credentials() -> None:
    connection = KafkaConnection.from_environ(OAUTH_ENV)
    producer, consumer = connection.client_kwargs("producer"), connection.for_service("persister").client_kwargs()
    tokens = producer["sasl_oauth_token_provider"]
    assert isinstance(tokens, ClientCredentialsTokenProvider)
    assert consumer["sasl_oauth_token_provider"] is tokens
    assert (tokens.token_url, tokens.client_id, tokens.scope) == (URL, "assetbus", "kafka")
    assert tokens.extensions() == {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert producer["sasl_mechanism"] == "OAUTHBEARER" and "sasl_plain_password" not in producer
    assert connection.describe() == ("pkc-1.confluent.cloud:9092 over SASL_SSL as assetbus "
                                     "(OAUTHBEARER from idp.example.com)")
    assert SECRET not in repr(connection) and SECRET not in connection.describe()


@pytest.mark.parametrize(("drop", "named"), [("KAFKA_SASL_OAUTH_CLIENT_SECRET", "KAFKA_SASL_OAUTH_CLIENT_SECRET"),
                                             ("KAFKA_SASL_OAUTH_TOKEN_URL", "KAFKA_SASL_OAUTH_TOKEN_URL")])
def test_a_missing_oauth_setting_is_named(drop: str, named: str) -> None:
    env = {k: v for k, v in OAUTH_ENV.items() if k != drop}
    with pytest.raises(ValueError, match=f"OAUTHBEARER \\(oidc\\) needs {named}"):
        KafkaConnection.from_environ(env)


MSK_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "b-1.orders.kafka.eu-west-1.amazonaws.com:9098",
           "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_MECHANISM": "OAUTHBEARER",
           "KAFKA_SASL_OAUTH_PROVIDER": "aws-msk-iam", "KAFKA_SASL_OAUTH_AWS_REGION": "eu-west-1"}


class FakeSigner:
    """The `MSKAuthTokenProvider` class's interface: (token, expiry as epoch milliseconds)."""

    calls: ClassVar[list[tuple[str, ...]]] = []

    @classmethod
    def generate_auth_token(cls, region: str) -> tuple[str, int]:
        cls.calls.append(("default", region))
        return f"msk-{len(cls.calls)}", int((time.time() + 900) * 1000)

    @classmethod
    def generate_auth_token_from_role_arn(cls, region: str, role_arn: str) -> tuple[str, int]:
        cls.calls.append(("role", region, role_arn))
        return "msk-role", int((time.time() + 900) * 1000)


async def test_msk_iam_is_selected_by_a_setting_and_signs_with_the_region_or_a_role() -> None:
    connection = KafkaConnection.from_environ(MSK_ENV)
    tokens = connection.client_kwargs()["sasl_oauth_token_provider"]
    assert isinstance(tokens, MskIamTokenProvider) and tokens.region == "eu-west-1"
    assert connection.describe().endswith("over SASL_SSL with MSK IAM (eu-west-1)")
    FakeSigner.calls = []
    clock = Clock()
    signed = MskIamTokenProvider("eu-west-1", signer=FakeSigner, clock=clock)
    assert await signed.token() == "msk-1" and await signed.token() == "msk-1"
    clock.now += 0.8 * 900 + 5
    assert await signed.token() == "msk-2"
    assert FakeSigner.calls == [("default", "eu-west-1"), ("default", "eu-west-1")]
    role = MskIamTokenProvider("eu-west-1", role_arn="arn:aws:iam::1:role/assetbus", signer=FakeSigner)
    assert await role.token() == "msk-role"


async def test_msk_iam_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer", None)
    with pytest.raises(OAuthCredentialsRefused, match=r"pip install 'assetbus-sdk\[msk\]'"):
        await MskIamTokenProvider("eu-west-1").token()


def test_msk_iam_needs_a_region() -> None:
    env = {k: v for k, v in MSK_ENV.items() if k != "KAFKA_SASL_OAUTH_AWS_REGION"}
    with pytest.raises(ValueError, match="OAUTHBEARER \\(aws-msk-iam\\) needs KAFKA_SASL_OAUTH_AWS_REGION"):
        KafkaConnection.from_environ(env)


def test_a_java_client_s_oauth_property_names_the_setting_to_use() -> None:
    with pytest.raises(ValueError, match=re.escape("'sasl.oauthbearer.token.endpoint.url' is set by assetbus; "
                                                   "use KAFKA_SASL_OAUTH_TOKEN_URL")):
        KafkaConnection.from_environ({"KAFKA_PROPERTIES": "sasl.oauthbearer.token.endpoint.url=https://idp/token"})
