"""Can this deployment run attested? `AttestationCheck` checks it in Airflow's api-server, `identity_report` on a
worker (docs/airflow.md, "Identity modes": Check it).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from assetbus.producers.airflow.attestation import (
    ENV_IDENTITY,
    ROUTE,
    WORKER_BACKEND_SETTING,
    AttestationRefused,
    api_reason,
    identity_mode,
    worker_state_store_backend,
)
from assetbus.producers.airflow.connection import DEFAULT_API_URL, ENV_API_URL
from assetbus.producers.airflow.store_assets import Receive, Scope, Send
from assetbus.producers.airflow.store_tokens import MissingSigningKey, signing_key_from_env
from assetbus.producers.secret_files import expand_file_variables
from assetbus.producers.tokens import TokenKey, issue_token
from assetbus.schemas import Provenance, SourceKind

__all__ = ["AttestationCheck", "Finding", "backend_findings", "identity_report", "key_findings"]

log = logging.getLogger("assetbus.airflow.identity")

PROBE_SOURCE = Provenance(kind=SourceKind.DAG, dag_id="airflow:probe", run_id="assetbus-key-probe")
"""What the key probe names: no DAG can have this id, and the probe has no scope, so it can do nothing."""
PROBE_BODY = {"kind": "dag", "dag_id": "assetbus_key_probe", "run_id": "assetbus_key_probe"}


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.name}: {'ok' if self.ok else 'FAILED'}: {self.detail}" + (f" ({self.fix})" if self.fix else "")


def key_findings(key: TokenKey, api_url: str, *, timeout_s: float = 5.0) -> list[Finding]:
    """Whether the API at `api_url` answers, and verifies tokens `key` signs (a scope-less probe: 403
    `insufficient_scope` means its signature was accepted, 401 `invalid_token` that it was not)."""
    probe = issue_token(key, PROBE_SOURCE, ttl_seconds=60, scope="", publish=[])
    try:
        with httpx.Client(base_url=api_url, timeout=timeout_s) as http:
            health = http.get("/healthz")
            answer = http.post(ROUTE, json=PROBE_BODY, headers={"Authorization": f"Bearer {probe}"})
    except httpx.HTTPError as error:
        return [Finding("assetbus API", False, f"{api_url} did not answer: {error}",
                        f"set {ENV_API_URL} to the assetbus API with ASSETBUS_AIRFLOW_URL (the minter)")]
    found = [Finding("assetbus API", health.status_code == 200, f"{api_url}/healthz answered {health.status_code}")]
    code, message = api_reason(answer)
    if answer.status_code == 403 and code == "insufficient_scope":
        found.append(Finding("signing key", True, f"the API at {api_url} verifies what this key signs"))
    elif answer.status_code == 404:
        found.append(Finding("signing key", False, f"the API at {api_url} mints nothing: {message}",
                             f"point {ENV_API_URL} at the API that has ASSETBUS_AIRFLOW_URL set"))
    else:
        found.append(Finding("signing key", False, f"the API at {api_url} refuses what this key signs: "
                             f"{answer.status_code} {code}: {message}",
                             "add the key's public half to the API's JWKS (`assetbus token keygen --key KEY "
                             "--jwks JWKS` adds it), or give the api-server the key the API's JWKS lists"))
    return found


def backend_findings() -> list[Finding]:
    """The api-server's side: its key, the API's URL, and their match."""
    try:
        expand_file_variables()
        key = signing_key_from_env()
    except (MissingSigningKey, OSError, ValueError) as error:  # SecretFileError is a ValueError
        return [Finding("signing key", False, str(error), "`assetbus token keygen --key minter.pem --jwks jwks.json`, "
                        "then ASSETBUS_TOKEN_SIGNING_KEY=minter.pem in the api-server's environment")]
    return key_findings(key, os.environ.get(ENV_API_URL) or DEFAULT_API_URL)


def identity_report() -> str:
    """A worker's identity mode and why; AttestationRefused when attested mode cannot work on this worker."""
    mode, why = identity_mode()
    if mode == "attested":
        bypass = worker_state_store_backend()
        if bypass:
            raise AttestationRefused(f"identity mode attested ({why}), but {WORKER_BACKEND_SETTING} = {bypass!r} "
                                     f"on this worker: tasks here cannot get attested tokens; unset it, or set "
                                     f"{ENV_IDENTITY}=credential", code="worker_backend_configured")
        return (f"identity mode attested ({why}): task tokens come through Airflow's task_state_store "
                "(AssetbusStoreBackend in the api-server); the worker credential serves DAG-level callbacks")
    return f"identity mode credential ({why}): task tokens are asked with the worker credential"


class AttestationCheck:
    """An ASGI middleware for Airflow's api-server that checks, when the api-server builds its app, that the
    backend can mint (`backend_findings`), and logs each problem as an error. It passes every request on."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        for finding in backend_findings():
            (log.info if finding.ok else log.error)("assetbus attested identity: %s", finding.line())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
