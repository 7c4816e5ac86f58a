"""The managed-Airflow sign-in recipes of docs/airflow.md that cannot run against their platform here: their
flows, with stand-ins for the platform's SDK and login endpoint (what MWAA's and Composer's documentation
describe). `TokenFile` runs against a real Airflow (tests/integration/airflow/test_managed_auth.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx

from examples.airflow.managed_auth import ComposerAuth, MwaaAuth


class StandInMwaa:
    """boto3's `mwaa` client, as far as the recipe uses it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def create_web_login_token(self, Name: str) -> dict[str, Any]:  # boto3's keyword
        self.asked.append(Name)
        return {"WebToken": f"web-{len(self.asked)}", "WebServerHostname": "abc.airflow.eu-west-1.amazonaws.com"}


def test_mwaa_signs_in_with_a_web_login_token_and_again_after_a_401() -> None:
    issued: list[str] = []

    def platform(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/pluginsv2/aws_mwaa/login":
            issued.append(f"jwt-for-{request.content.decode().removeprefix('token=')}")
            return httpx.Response(302, headers={"Set-Cookie": f"_token={issued[-1]}; Path=/; Secure"})
        expired = len(issued) == 1 and request.url.params.get("expired")
        if request.headers.get("Authorization") != f"Bearer {issued[-1]}" or expired:
            return httpx.Response(401)
        return httpx.Response(200, json={"dags": []})

    mwaa = StandInMwaa()
    client = httpx.Client(base_url="https://abc.airflow.eu-west-1.amazonaws.com", auth=MwaaAuth("prod", mwaa),
                          transport=httpx.MockTransport(platform))
    assert client.get("/api/v2/dags").status_code == 200
    assert client.get("/api/v2/dags").status_code == 200  # the JWT is kept
    assert (mwaa.asked, issued) == (["prod"], ["jwt-for-web-1"])
    assert client.get("/api/v2/dags", params={"expired": "1"}).status_code == 200  # 401: signed in again
    assert (mwaa.asked, issued) == (["prod", "prod"], ["jwt-for-web-1", "jwt-for-web-2"])


def test_composer_sends_the_access_token_of_the_google_credentials() -> None:
    credentials = SimpleNamespace(valid=True, token="ya29.access-token")
    seen: list[str | None] = []

    def composer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(200, json={"dags": []})

    client = httpx.Client(base_url="https://example-dot-europe-west1.composer.googleusercontent.com",
                          auth=ComposerAuth(credentials), transport=httpx.MockTransport(composer))
    assert client.get("/api/v2/dags").status_code == 200
    assert seen == ["Bearer ya29.access-token"]
