"""Signing in to a managed Airflow's REST API: `httpx.Auth` factories for `ASSETBUS_AIRFLOW_AUTH`.

The bridge, `assetbus airflow sync` and the API's attempt check call Airflow's REST API; on a managed Airflow
the platform decides how. Put this file on the assetbus services' `PYTHONPATH` (or copy the class you need into
a package of yours) and set, for example, `ASSETBUS_AIRFLOW_AUTH=managed_auth:MwaaAuth`. Each class is called
with no arguments and reads its own settings from the environment.

- `TokenFile`: a bearer token read from a file at every request, so a sidecar or a mounted secret can rotate it
  (Astronomer Deployment API tokens, or any platform token). Tested against a real Airflow 3.3.2.
- `MwaaAuth`: Amazon MWAA, Airflow 3: a web login token from the MWAA API, exchanged for the JWT Airflow's REST
  API takes. Untested against MWAA (its flow is tested against a stand-in login endpoint).
- `ComposerAuth`: Google Cloud Composer 3: an OAuth access token of the service's Google account (Application
  Default Credentials). Untested against Composer (tested with stand-in credentials).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import httpx


class TokenFile(httpx.Auth):
    """`Authorization: Bearer <the file's content>`, read at every request from `AIRFLOW_TOKEN_FILE`."""

    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path or os.environ["AIRFLOW_TOKEN_FILE"])

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.path.read_text().strip()}"
        yield request


class MwaaAuth(httpx.Auth):
    """Amazon MWAA (Airflow 3): `create_web_login_token` for the environment `MWAA_ENVIRONMENT` (the service's
    IAM role needs `airflow:CreateWebLoginToken`), exchanged at `https://<web server>/pluginsv2/aws_mwaa/login`
    for the JWT in the `_token` cookie; signed in again when Airflow answers 401."""

    def __init__(self, environment: str | None = None, mwaa: Any = None) -> None:
        self.environment = environment or os.environ["MWAA_ENVIRONMENT"]
        self._mwaa = mwaa
        self._jwt: str | None = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self._jwt is None:
            yield from self._sign_in()
        request.headers["Authorization"] = f"Bearer {self._jwt}"
        response = yield request
        if response.status_code == 401:
            yield from self._sign_in()
            request.headers["Authorization"] = f"Bearer {self._jwt}"
            yield request

    def _sign_in(self) -> Generator[httpx.Request, httpx.Response, None]:
        if self._mwaa is None:
            import boto3  # the services' image needs boto3 for this recipe

            self._mwaa = boto3.client("mwaa")
        login = self._mwaa.create_web_login_token(Name=self.environment)
        response = yield httpx.Request("POST", f"https://{login['WebServerHostname']}/pluginsv2/aws_mwaa/login",
                                       data={"token": login["WebToken"]})
        self._jwt = response.cookies["_token"]


class ComposerAuth(httpx.Auth):
    """Google Cloud Composer 3: `Authorization: Bearer` with an OAuth access token of the Google account the
    services run as (Application Default Credentials, scope cloud-platform), refreshed when it expires. The
    account needs a Composer role that may use the Airflow REST API."""

    def __init__(self, credentials: Any = None) -> None:
        if credentials is None:
            import google.auth  # google-auth, in the services' image for this recipe

            credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        self._credentials = credentials

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if not self._credentials.valid:
            from google.auth.transport.requests import Request

            self._credentials.refresh(Request())
        request.headers["Authorization"] = f"Bearer {self._credentials.token}"
        yield request
