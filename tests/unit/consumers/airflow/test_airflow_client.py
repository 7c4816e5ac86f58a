"""The Airflow REST client: the token flow, and clear, typed errors for down / 401 / 403 / 5xx (Airflow faked
at the HTTP layer: these are client rules, not Airflow behaviour)."""

from __future__ import annotations

import httpx
import pytest

from assetbus.consumers.airflow import (
    AirflowAccount,
    AirflowAuthError,
    AirflowClient,
    AirflowNotFound,
    AirflowRefused,
    AirflowUnavailable,
)

ACCOUNT = AirflowAccount(url="http://airflow.test", username="assetbus", password="secret")


def client(handler: httpx.MockTransport) -> AirflowClient:
    return AirflowClient(ACCOUNT, transport=handler)


async def test_a_401_fetches_a_fresh_token_once_then_succeeds() -> None:
    issued: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            issued.append(f"token-{len(issued)}")
            return httpx.Response(201, json={"access_token": issued[-1]})
        if request.headers["Authorization"] == "Bearer token-0":
            return httpx.Response(401, json={"detail": "expired"})
        return httpx.Response(200, json={"state": "running"})

    async with client(httpx.MockTransport(handle)) as airflow:
        assert await airflow.get("/dags/d/dagRuns/r") == {"state": "running"}
    assert issued == ["token-0", "token-1"]


@pytest.mark.parametrize(("status", "error"), [(401, AirflowAuthError), (403, AirflowAuthError),
                                               (404, AirflowNotFound), (422, AirflowRefused),
                                               (500, AirflowUnavailable), (503, AirflowUnavailable),
                                               (429, AirflowUnavailable)])
async def test_statuses_become_typed_errors_that_say_whether_to_retry(status: int, error: type[Exception]) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            return httpx.Response(201, json={"access_token": "t"})
        return httpx.Response(status, json={"detail": "nope"})

    async with client(httpx.MockTransport(handle)) as airflow:
        with pytest.raises(error) as raised:
            await airflow.get("/dags/d")
    assert raised.value.status == status  # type: ignore[attr-defined]
    assert raised.value.retriable is (status in (401, 403, 429, 500, 503))  # type: ignore[attr-defined]
    assert str(status) in str(raised.value)


async def test_wrong_credentials_are_an_auth_error_naming_the_account() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"detail": "Invalid credentials"})

    async with client(httpx.MockTransport(handle)) as airflow:
        with pytest.raises(AirflowAuthError, match="refused the account 'assetbus'"):
            await airflow.get("/dags")


async def test_airflow_down_is_unavailable_and_retriable() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    async with client(httpx.MockTransport(handle)) as airflow:
        with pytest.raises(AirflowUnavailable, match="did not answer") as raised:
            await airflow.get("/dags")
    assert raised.value.retriable


async def test_pages_reads_every_page_of_a_list() -> None:
    items = [{"name": f"a{i}"} for i in range(250)]  # three pages of 100

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            return httpx.Response(201, json={"access_token": "t"})
        offset, limit = int(request.url.params["offset"]), int(request.url.params["limit"])
        return httpx.Response(200, json={"assets": items[offset:offset + limit], "total_entries": len(items)})

    async with client(httpx.MockTransport(handle)) as airflow:
        assert await airflow.pages("/assets", "assets") == items
