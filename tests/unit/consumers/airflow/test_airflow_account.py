"""How assetbus authenticates to Airflow's REST API: a password, a static token, or an httpx.Auth named by an
import path; exactly one (Airflow faked at the HTTP layer: these are client rules, not Airflow behaviour)."""

from __future__ import annotations

from collections.abc import Generator

import httpx
import pytest

from assetbus.consumers.airflow import AirflowAccount, AirflowAuthError, AirflowClient, AirflowTokenRefused
from assetbus.consumers.airflow.account import load_auth

URL = "http://airflow.test"
HERE = __name__


class PlatformAuth(httpx.Auth):
    """A platform's token flow: fetch a token from its own endpoint once, then send it."""

    fetched = 0

    def __init__(self) -> None:
        self.token: str | None = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.token is None:
            answer = yield httpx.Request("POST", "http://platform.test/oauth/token")
            self.token = answer.json()["access_token"]
            PlatformAuth.fetched += 1
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


def not_an_auth() -> object:
    return object()


def test_an_account_needs_exactly_one_way_to_authenticate() -> None:
    with pytest.raises(ValueError, match="exactly one of password, token or auth, got none"):
        AirflowAccount(url=URL, username="assetbus")
    with pytest.raises(ValueError, match="got password, token"):
        AirflowAccount(url=URL, username="assetbus", password="pw", token="jwt")
    assert AirflowAccount(url=URL, token="jwt").method == "token"
    assert "jwt" not in repr(AirflowAccount(url=URL, token="jwt"))


async def test_a_static_token_is_sent_as_bearer_and_never_exchanged_at_auth_token() -> None:
    seen: list[tuple[str, str]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, request.headers.get("Authorization", "")))
        return httpx.Response(200, json={"dags": []})

    async with AirflowClient(AirflowAccount(url=URL, token="platform-jwt"),
                             transport=httpx.MockTransport(handle)) as airflow:
        assert await airflow.get("/dags") == {"dags": []}
        await airflow.get("/dags")
    assert seen == [("/api/v2/dags", "Bearer platform-jwt")] * 2


@pytest.mark.parametrize(("status", "detail"), [(401, "Signature has expired"), (403, "Invalid JWT token")])
async def test_a_refused_static_token_is_one_clear_error_not_a_retry(status: int, detail: str) -> None:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(status, json={"detail": detail})

    async with AirflowClient(AirflowAccount(url=URL, token="expired-jwt"),
                             transport=httpx.MockTransport(handle)) as airflow:
        with pytest.raises(AirflowTokenRefused, match="the Airflow token was refused: expired or revoked") as raised:
            await airflow.get("/dags")
    assert calls == ["/api/v2/dags"]
    assert raised.value.status == status and not raised.value.retriable
    assert "expired-jwt" not in str(raised.value)


async def test_an_auth_named_by_import_path_runs_its_own_flow() -> None:
    PlatformAuth.fetched = 0
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "platform.test":
            return httpx.Response(200, json={"access_token": "from-the-platform"})
        seen.append(request.headers["Authorization"])
        return httpx.Response(200, json={"state": "running"})

    account = AirflowAccount(url=URL, auth=f"{HERE}:PlatformAuth")
    async with AirflowClient(account, transport=httpx.MockTransport(handle)) as airflow:
        await airflow.get("/dags/d/dagRuns/r")
        await airflow.get("/dags/d/dagRuns/r")
    assert seen == ["Bearer from-the-platform"] * 2
    assert PlatformAuth.fetched == 1


async def test_a_static_token_without_a_permission_is_an_auth_error_not_a_refused_token() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"detail": "Forbidden"})

    async with AirflowClient(AirflowAccount(url=URL, token="jwt"), transport=httpx.MockTransport(handle)) as airflow:
        with pytest.raises(AirflowAuthError, match="static token") as raised:
            await airflow.get("/dags")
    assert not isinstance(raised.value, AirflowTokenRefused)


async def test_a_401_through_an_import_path_auth_is_an_auth_error_naming_it() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "platform.test":
            return httpx.Response(200, json={"access_token": "t"})
        return httpx.Response(401, json={"detail": "nope"})

    async with AirflowClient(AirflowAccount(url=URL, auth=f"{HERE}:PlatformAuth"),
                             transport=httpx.MockTransport(handle)) as airflow:
        with pytest.raises(AirflowAuthError, match=f"the auth '{HERE}:PlatformAuth'") as raised:
            await airflow.get("/dags")
    assert not isinstance(raised.value, AirflowTokenRefused)


@pytest.mark.parametrize(("path", "says"), [
    ("no_colon_here", "not an import path of the form package.module:Factory"),
    ("assetbus_no_such_module:Auth", "cannot import 'assetbus_no_such_module'"),
    (f"{HERE}:NoSuchFactory", f"module '{HERE}' has no 'NoSuchFactory'"),
    (f"{HERE}:URL", "is not callable"),
    (f"{HERE}:not_an_auth", "returned a object, not an httpx.Auth"),
])
def test_a_bad_import_path_says_what_is_wrong(path: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_auth(path)


def test_an_import_path_gives_the_auth_its_factory_makes() -> None:
    assert isinstance(load_auth(f"{HERE}:PlatformAuth"), PlatformAuth)
