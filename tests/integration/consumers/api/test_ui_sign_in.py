"""`/ui` and `/ui/api/*` need an operator token (scope `ui:read`): anonymous, forged and expired requests are
refused (401, or the browser is sent to `/ui/login`), an emitter token is refused (403), the operator token
works as a bearer token and through the sign-in cookie, and it cannot be used to emit."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from assetbus.consumers.api.ui_auth import COOKIE, SCOPE_UI_READ, operator_token
from assetbus.producers import SigningKey, dag_token, task_token

ROUTES = ["/ui/api/assets", "/ui/api/events", "/ui/api/dags", "/ui/api/events/1", "/ui/api/lag",
          "/ui/api/dead-letters"]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _expired(secret: str) -> str:
    now = int(time.time())
    return jwt.encode({"iss": "assetbus", "sub": "operator:old", "aud": "assetbus", "iat": now - 7200,
                       "exp": now - 3600, "scope": SCOPE_UI_READ}, secret, algorithm="HS256")


@pytest.mark.parametrize("route", ROUTES)
async def test_the_json_routes_refuse_anonymous_forged_expired_and_emitter_tokens(
        api_client: httpx.AsyncClient, token_secret: str, route: str) -> None:
    anonymous = await api_client.get(route)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "missing_token", anonymous.text
    assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")

    forged = operator_token("another-installations-secret-of-32-bytes", "mallory")
    for token in (forged, _expired(token_secret), "not-a-jwt"):
        refused = await api_client.get(route, headers=_bearer(token))
        assert refused.status_code == 401 and refused.json()["code"] == "invalid_token", refused.text
        api_client.cookies.set(COOKIE, token)
        cookie = await api_client.get(route)
        api_client.cookies.clear()
        assert cookie.status_code == 401 and cookie.json()["code"] == "invalid_token", cookie.text

    for emitter in (task_token(token_secret, "ingest", "r1", "load"), dag_token(token_secret, "ingest", "r1")):
        wrong = await api_client.get(route, headers=_bearer(emitter))
        assert wrong.status_code == 403 and wrong.json()["code"] == "insufficient_scope", wrong.text


async def test_the_operator_token_reads_the_json_as_a_bearer_token(api_client: httpx.AsyncClient,
                                                                  token_secret: str) -> None:
    token = operator_token(token_secret, "alice")
    assets = await api_client.get("/ui/api/assets", headers=_bearer(token))
    assert assets.status_code == 200 and assets.json() == [], assets.text
    missing = await api_client.get("/ui/api/events/424242", headers=_bearer(token))
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


async def test_a_browser_is_sent_to_sign_in_and_the_cookie_opens_the_page(api_client: httpx.AsyncClient,
                                                                         token_secret: str) -> None:
    for path in ("/ui", "/ui/"):
        anonymous = await api_client.get(path)
        assert anonymous.status_code == 303 and anonymous.headers["location"] == "/ui/login"
    form = await api_client.get("/ui/login")
    assert form.status_code == 200 and 'name="token"' in form.text

    emitter = await api_client.post("/ui/login", data={"token": task_token(token_secret, "ingest", "r1", "load")})
    assert emitter.status_code == 403 and "ui:read" in emitter.text and "set-cookie" not in emitter.headers
    expired = await api_client.post("/ui/login", data={"token": _expired(token_secret)})
    assert expired.status_code == 401 and "token expired" in expired.text and "set-cookie" not in expired.headers
    assert (await api_client.post("/ui/login", data={"token": ""})).status_code == 401

    token = operator_token(token_secret, "alice", ttl_seconds=600)
    signed_in = await api_client.post("/ui/login", data={"token": token})
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/ui"
    cookie = signed_in.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={token};")
    attributes = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= set(attributes), cookie
    assert attributes["samesite"].lower() == "samesite=strict" and attributes["path"] == "Path=/ui"
    assert 590 <= int(attributes["max-age"].split("=")[1]) <= 600

    api_client.cookies.set(COOKIE, token)
    page = await api_client.get("/ui")
    assert page.status_code == 200 and "/ui/static/app.js" in page.text
    assert (await api_client.get("/ui/api/dags")).status_code == 200

    signed_out = await api_client.post("/ui/logout")
    assert signed_out.status_code == 303 and f'{COOKIE}=""' in signed_out.headers["set-cookie"]
    api_client.cookies.clear()
    assert (await api_client.get("/ui")).status_code == 303


async def test_an_operator_token_cannot_emit_or_touch_state(api_client: httpx.AsyncClient,
                                                            token_secret: str) -> None:
    token = operator_token(token_secret, "alice")
    emit = await api_client.post("/execution/asset-events/emit", headers=_bearer(token),
                                 json={"asset": {"name": "orders", "uri": "s3://bucket/orders/"}})
    assert emit.status_code == 401 and emit.json()["code"] == "invalid_token", emit.text
    state = await api_client.get("/execution/store/ti/00000000-0000-0000-0000-000000000000/k", headers=_bearer(token))
    assert state.status_code == 401 and state.json()["detail"]["reason"] == "invalid_token", state.text


def test_an_eddsa_operator_token_verifies_against_the_jwks_only() -> None:
    from assetbus.consumers.api.ui_auth import operator_of
    from assetbus.consumers.auth import StaticKeys, TokenError, TokenVerifier

    key = SigningKey.generate("EdDSA")
    verifier = TokenVerifier(keys=StaticKeys(key.jwks()))
    found = operator_of(verifier, operator_token(key, "alice"))
    assert found.subject == "operator:alice" and found.scopes == {SCOPE_UI_READ}
    with pytest.raises(TokenError):  # an HS256 token at a JWKS-only API
        operator_of(verifier, operator_token("a-local-secret-of-at-least-32-bytes!", "alice"))
    with pytest.raises(TokenError):  # another installation's key
        operator_of(verifier, operator_token(SigningKey.generate("EdDSA"), "alice"))
