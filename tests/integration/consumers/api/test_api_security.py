"""Authentication: missing, forged, expired and wrong-audience tokens are 401; scopes are enforced."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from assetbus.producers import issue_token, task_token
from assetbus.schemas import Provenance, SourceKind, task_instance_id

SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1,
                    try_number=1)
URL = f"/execution/store/ti/{task_instance_id('ingest', 'run-1', 'load', -1)}/checkpoint"


def reason(response: httpx.Response) -> str:
    """The reason of a state store error (`{"detail": {"reason", "message"}}`, Airflow's shape)."""
    return str(response.json()["detail"]["reason"])


async def test_a_request_without_a_token_is_401_with_a_challenge(api_client: httpx.AsyncClient) -> None:
    response = await api_client.get(URL)
    assert response.status_code == 401
    assert reason(response) == "missing_token"
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_non_bearer_authorization_is_401(api_client: httpx.AsyncClient) -> None:
    response = await api_client.get(URL, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert response.status_code == 401


@pytest.mark.parametrize("why", ["forged signature", "wrong audience", "expired", "garbage", "no exp claim"])
async def test_a_bad_token_is_401_invalid_token(api_client: httpx.AsyncClient, token_secret: str, why: str) -> None:
    tokens = {
        "forged signature": task_token("not-the-secret-but-long-enough-for-hs256-keys", "ingest", "run-1", "load"),
        "wrong audience": issue_token(token_secret, SOURCE, audience="someone-else"),
        "expired": issue_token(token_secret, SOURCE, ttl_seconds=-3600),
        "garbage": "not.a.jwt",
        "no exp claim": jwt.encode({**SOURCE.model_dump(mode="json"), "aud": "assetbus", "sub": "x",
                                    "scope": "ti:self"}, token_secret, algorithm="HS256"),
    }
    response = await api_client.get(URL, headers={"Authorization": f"Bearer {tokens[why]}"})
    assert response.status_code == 401
    assert reason(response) == "invalid_token"
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_an_alg_none_token_is_401(api_client: httpx.AsyncClient) -> None:
    claims = {**SOURCE.model_dump(mode="json"), "aud": "assetbus", "sub": "x", "exp": int(time.time()) + 60}
    token = jwt.encode(claims, key="", algorithm="none")  # PyJWT takes "" as no key for "none"
    assert (await api_client.get(URL, headers={"Authorization": f"Bearer {token}"})).status_code == 401


async def test_a_token_without_scope_ti_self_is_403_insufficient_scope(api_client: httpx.AsyncClient,
                                                                      token_secret: str) -> None:
    token = issue_token(token_secret, SOURCE, scope="emit")
    response = await api_client.get(URL, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert reason(response) == "insufficient_scope"


async def test_a_token_without_scope_emit_cannot_emit_over_http(api_client: httpx.AsyncClient,
                                                               token_secret: str) -> None:
    token = issue_token(token_secret, SOURCE, scope="ti:self")
    response = await api_client.post("/execution/asset-events/emit", headers={"Authorization": f"Bearer {token}"},
                                     json={"asset": {"name": "orders", "uri": "s3://bucket/orders/"}})
    assert response.status_code == 403 and response.json()["code"] == "insufficient_scope"


async def test_authentication_is_checked_before_input(api_client: httpx.AsyncClient) -> None:
    for path in ("/execution/store/ti/not-a-uuid/checkpoint", "/execution/state/ti/not-a-uuid/checkpoint"):
        response = await api_client.get(path)
        assert response.status_code == 401 and reason(response) == "missing_token"


async def test_a_dated_version_header_is_served_by_the_newest_version_not_after_it(api_client: httpx.AsyncClient,
                                                                                  token_secret: str) -> None:
    headers = {"Authorization": f"Bearer {task_token(token_secret, 'ingest', 'run-1', 'load')}"}
    later = await api_client.get(URL, headers={**headers, "Assetbus-API-Version": "2030-01-01"})
    assert later.status_code == 404 and later.headers["assetbus-api-version"] == "2026-11-29"
    too_old = await api_client.get(URL, headers={**headers, "Assetbus-API-Version": "2020-01-01"})
    malformed = await api_client.get(URL, headers={**headers, "Assetbus-API-Version": "v2"})
    assert (too_old.status_code, malformed.status_code) == (400, 400)
    assert reason(too_old) == "unsupported_api_version"


async def test_health_needs_no_token(api_client: httpx.AsyncClient) -> None:
    response = await api_client.get("/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"
