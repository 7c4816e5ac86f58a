"""Attested task tokens: a task reads the reserved task-state key `ATTESTATION_KEY`, and in the api-server the
`Attestor` signs a one-minute attestation of the try Airflow verified (scope `airflow:attested`: it can neither
emit nor touch state) and exchanges it at the minter (`POST /airflow/tokens`) for the emission token.
docs/airflow.md, "Identity modes", has the whole flow.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from assetbus.producers.airflow.store_assets import in_session
from assetbus.producers.api_client import ApiUnavailable, SyncExecutionApi
from assetbus.producers.errors import EmitterError
from assetbus.producers.tokens import TokenKey, issue_token
from assetbus.schemas import SCOPE_AIRFLOW_ATTESTED, Provenance, SourceKind

__all__ = [
    "ATTESTATION_KEY",
    "ATTESTATION_TTL_S",
    "ENV_IDENTITY",
    "FINISHED_STATES",
    "WORKER_BACKEND_SETTING",
    "AttemptLookup",
    "AttestationRefused",
    "AttestedAttempt",
    "Attestor",
    "IdentityMode",
    "airflow_attempt",
    "api_reason",
    "identity_mode",
    "worker_state_store_backend",
]

log = logging.getLogger("assetbus.airflow.attestation")

ATTESTATION_KEY = "assetbus:emission-token"
"""The reserved task-state key whose read is a token request; it cannot be written or deleted."""
ATTESTATION_TTL_S = 60
"""An attestation is exchanged at once, by the api-server itself: it needs no longer life."""
FINISHED_STATES = frozenset({"success", "failed", "up_for_retry", "up_for_reschedule", "skipped"})
"""Airflow states of a try that ended (its callbacks may still run)."""
ENV_IDENTITY = "ASSETBUS_AIRFLOW_IDENTITY"
"""`attested` (the default) or `credential`: how a worker's SDK gets its task tokens."""
WORKER_BACKEND_SETTING = "[workers] state_store_backend"
IdentityMode = Literal["attested", "credential"]
ROUTE = "/airflow/tokens"


class AttestationRefused(EmitterError):
    """No attested token for this request; `code` is the machine-readable reason, `status` the HTTP status."""

    def __init__(self, message: str, *, code: str, status: int = 403) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def api_reason(response: httpx.Response) -> tuple[str | None, str]:
    """The `code` and `message` of an assetbus API refusal (no code, and the text, when it is not JSON)."""
    try:
        body = response.json()
        return body.get("code"), str(body.get("message", body))
    except ValueError:
        return None, response.text[:300]


def identity_mode() -> tuple[IdentityMode, str]:
    """The identity mode a worker runs in, and why (for the connection test and `assetbus doctor`)."""
    value = os.environ.get(ENV_IDENTITY, "").strip().lower()
    if value in ("attested", "credential"):
        return value, f"{ENV_IDENTITY}={value}"  # type: ignore[return-value]
    if value:
        raise ValueError(f"{ENV_IDENTITY}={value!r}: expected 'attested' (the default) or 'credential'")
    return "attested", f"the default ({ENV_IDENTITY} is not set)"


def worker_state_store_backend() -> str:
    """This worker's `[workers] state_store_backend` ('' when unset, or without Airflow)."""
    try:
        from airflow.sdk.configuration import conf
    except ImportError:
        return ""
    return str(conf.get("workers", "state_store_backend", fallback="") or "").strip()


@dataclass(frozen=True)
class AttestedAttempt:
    """What Airflow's metadata says of the task instance whose JWT called: the running try and its state."""

    ti_id: str
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    state: str
    ended_at: int | None
    """The end of a finished try, seconds since the epoch (None while it runs)."""


AttemptLookup = Callable[[Any, Any | None], AttestedAttempt | None]


@in_session
def airflow_attempt(scope: Any, session: Any) -> AttestedAttempt | None:
    """The task instance of `scope` as Airflow's metadata DB has it now (None: no such task instance)."""
    from airflow.models.taskinstance import TaskInstance as TI
    from sqlalchemy import select

    row = session.execute(select(TI.id, TI.try_number, TI.state, TI.end_date).where(
        TI.dag_id == scope.dag_id, TI.run_id == scope.run_id, TI.task_id == scope.task_id,
        TI.map_index == int(scope.map_index))).first()
    if row is None:
        return None
    ti_id, try_number, state, end_date = row
    state_name = str(getattr(state, "value", state))
    ended = int(end_date.timestamp()) if end_date is not None and state_name in FINISHED_STATES else None
    return AttestedAttempt(str(ti_id), scope.dag_id, scope.run_id, scope.task_id, int(scope.map_index),
                           int(try_number), state_name, ended)


class Attestor:
    """In the api-server: turns the `TaskScope` Airflow verified into an emission token, via the minter."""

    def __init__(self, key: TokenKey, api_url: str, *, http: httpx.Client | None = None,
                 lookup: AttemptLookup = airflow_attempt, calling: Callable[[], object] | None = None) -> None:
        self._key = key
        self.api_url = api_url
        self._http = http
        self._lookup = lookup
        self._calling = calling

    def attest(self, attempt: AttestedAttempt) -> str:
        """The signed attestation of `attempt` (what the minter exchanges for its emission token)."""
        source = Provenance(kind=SourceKind.TASK, dag_id=attempt.dag_id, run_id=attempt.run_id,
                            task_id=attempt.task_id, map_index=attempt.map_index, try_number=attempt.try_number)
        claims: dict[str, object] = {"ti_id": attempt.ti_id, "ti_state": attempt.state, "ended_at": attempt.ended_at}
        return issue_token(self._key, source, ttl_seconds=ATTESTATION_TTL_S, subject=f"airflow-ti:{attempt.ti_id}",
                           scope=SCOPE_AIRFLOW_ATTESTED, publish=[], extra_claims=claims)

    def token(self, scope: Any, session: Any | None) -> dict[str, Any]:
        """The minter's answer (token, expires_at, bootstrap_servers, topic_prefix) for the calling task."""
        attempt = self._lookup(scope, session)
        if attempt is None:
            raise AttestationRefused(f"Airflow has no task instance {scope!r}", code="attempt_not_running")
        calling = self._calling() if self._calling is not None else None
        if calling is not None and str(calling) != attempt.ti_id:  # belt and braces: Airflow checked ti:self
            raise AttestationRefused("the calling task instance is not the one the scope names",
                                     code="wrong_task_instance")
        started = time.perf_counter()
        api = SyncExecutionApi(self.api_url, self.attest(attempt), http=self._http)
        body = {"kind": "task", "dag_id": attempt.dag_id, "run_id": attempt.run_id, "task_id": attempt.task_id,
                "map_index": attempt.map_index, "try_number": attempt.try_number, "ti_id": attempt.ti_id}
        try:  # an exchange may be repeated: the SDK's one retry rule retries what is transient
            response = api.request("POST", ROUTE, repeatable=True, json=body)
        except ApiUnavailable as error:
            raise AttestationRefused(f"the assetbus API at {self.api_url} did not answer: {error}",
                                     code="assetbus_unavailable", status=503) from error
        finally:
            if self._http is None:
                api.close()
        if response.status_code != 200:
            code, message = api_reason(response)
            raise AttestationRefused(f"the assetbus minter refused: {message}", code=code or "assetbus_error",
                                     status=response.status_code if response.status_code < 500 else 503)
        log.info("attested token for %s/%s/%s[%s] try %s (%s) in %.1f ms", attempt.dag_id, attempt.run_id,
                 attempt.task_id, attempt.map_index, attempt.try_number, attempt.state,
                 (time.perf_counter() - started) * 1000)
        answer = response.json()
        if not isinstance(answer, dict):
            raise AttestationRefused("the assetbus minter answered no token", code="assetbus_error", status=503)
        return answer
