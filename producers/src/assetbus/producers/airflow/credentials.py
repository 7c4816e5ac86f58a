"""Emitter tokens for Airflow attempts (task code holds no key), in the identity mode `ASSETBUS_AIRFLOW_IDENTITY`
names (docs/airflow.md, "Identity modes", says which attempts each mode serves how); each is asked once per
attempt and process, and again shortly before it expires.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from assetbus.producers.airflow.attempt import Attempt
from assetbus.producers.airflow.attestation import (
    ATTESTATION_KEY,
    ENV_IDENTITY,
    ROUTE,
    WORKER_BACKEND_SETTING,
    api_reason,
    identity_mode,
    worker_state_store_backend,
)
from assetbus.producers.airflow.connection import CONN_ID, ENV_WORKER_TOKEN, WorkerAccess, worker_access
from assetbus.producers.api_client import API_RETRY, ApiUnavailable, SyncExecutionApi
from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.secret_files import expand_file_variables

_CREDENTIAL_REFUSED = {"missing_token", "invalid_token", "insufficient_scope"}
RENEW_BEFORE_S = 120.0


class TokenRequestFailed(EmitterError):
    """The execution API would not mint a token for this attempt; `code` is its machine-readable reason."""

    def __init__(self, message: str, *, code: str | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable


@dataclass(frozen=True)
class Credentials:
    token: str = field(repr=False)
    expires_at: float
    kafka: KafkaConnection
    topic_prefix: str
    renew_at: float = 0.0
    """When to ask again: RENEW_BEFORE_S before expiry, or half-way through a shorter life (attested tokens
    live a minute); 0: RENEW_BEFORE_S before expiry."""

    @property
    def fresh(self) -> bool:
        return (self.renew_at or self.expires_at - RENEW_BEFORE_S) > time.time()


class TokenSource:
    """Asks the API for tokens and caches them per attempt (thread-safe). Without `access`, the API and the
    worker credential are read at each token request, so a rotated credential is used from the next one on."""

    def __init__(self, access: WorkerAccess | None = None, *, timeout_s: float = 10.0,
                 conn_id: str = CONN_ID, http: httpx.Client | None = None, retry: RetryPolicy = API_RETRY) -> None:
        self.access = access
        self.conn_id = conn_id
        self.timeout_s = timeout_s
        self.retry = retry
        self._http = http
        self._cache: dict[tuple[object, ...], Credentials] = {}
        self._lock = threading.Lock()

    def credentials(self, attempt: Attempt) -> Credentials:
        with self._lock:
            cached = self._cache.get(attempt.key)
            if cached is not None and cached.fresh:
                return cached
            fresh = self._ask(attempt)
            self._cache[attempt.key] = fresh
            return fresh

    def _ask(self, attempt: Attempt) -> Credentials:
        if attempt.is_task and identity_mode()[0] == "attested":
            return self._attested(attempt)
        return self._with_credential(attempt)

    def _attested(self, attempt: Attempt) -> Credentials:
        """The attempt's token through Airflow's state store channel (nothing is sent if it cannot be proven)."""
        bypass = worker_state_store_backend()
        if bypass:
            raise TokenRequestFailed(
                f"assetbus runs attested ({ENV_IDENTITY}), and this worker's Airflow sets {WORKER_BACKEND_SETTING} = "
                f"{bypass!r} (AIRFLOW__WORKERS__STATE_STORE_BACKEND): task state then passes through a backend in "
                f"the worker, so a value read from the state store is not proven to come from Airflow's api-server. "
                f"Unset {WORKER_BACKEND_SETTING} on the workers, or run in credential mode ({ENV_IDENTITY}="
                f"credential, with the API's ASSETBUS_API_AIRFLOW_IDENTITY=credential)",
                code="worker_backend_configured")
        if attempt.store is None:
            raise TokenRequestFailed(f"no task_state_store in this task's context: assetbus's attested identity "
                                     f"reads its token through it ({ENV_IDENTITY}=attested)",
                                     code="attestation_unavailable")
        try:
            answer = attempt.store.get(ATTESTATION_KEY)
        except Exception as error:  # Airflow's AirflowRuntimeError: the api-server's refusal, as the supervisor saw it
            code, message = _airflow_refusal(error)
            raise TokenRequestFailed(f"no attested token for {attempt.dag_id}/{attempt.run_id}/{attempt.task_id}: "
                                     f"{code}: {message}", code=code, retriable=code == "assetbus_unavailable") \
                from error
        if answer is None and attempt.callback:
            # a retry callback: Airflow's execution API no longer knows this try's task instance id
            return self._with_credential(Attempt(dag_id=attempt.dag_id, run_id=attempt.run_id))
        if not isinstance(answer, dict) or "token" not in answer:
            raise TokenRequestFailed(
                "Airflow's api-server does not answer assetbus's token key: it does not run AssetbusStoreBackend "
                "([state_store] backend = assetbus.producers.airflow.store_backend.AssetbusStoreBackend, "
                f"docs/airflow.md, Identity modes), or {ENV_IDENTITY}=credential is meant",
                code="attestation_unavailable")
        return _credentials(self.access or worker_access(self.conn_id), answer)

    def _with_credential(self, attempt: Attempt) -> Credentials:
        if self.access is None:
            expand_file_variables()  # ASSETBUS_AIRFLOW_WORKER_TOKEN_FILE, where no connection holds it
        access = self.access or worker_access(self.conn_id)
        if access.credential is None:
            raise TokenRequestFailed(f"this worker has no assetbus worker credential: set it as the password of the "
                                     f"Airflow connection {CONN_ID} (`assetbus token worker` mints it), or in "
                                     f"{ENV_WORKER_TOKEN}", code="missing_token")
        api = SyncExecutionApi(access.api_url, access.credential, timeout_s=self.timeout_s, retry=self.retry,
                               http=self._http)
        try:  # a token request may be repeated: the SDK's one retry rule retries what is transient
            response = api.request("POST", ROUTE, repeatable=True, json=attempt.request())
        except ApiUnavailable as error:
            raise TokenRequestFailed(f"the assetbus API at {access.api_url} did not answer: {error}",
                                     retriable=True) from error
        finally:
            if self._http is None:
                api.close()
        if response.status_code == 200:
            return _credentials(access, response.json())
        code, message = api_reason(response)
        hint = (f" (the worker credential from {access.source} is not accepted: mint a new one with "
                f"`assetbus token worker`)" if code in _CREDENTIAL_REFUSED else "")
        raise TokenRequestFailed(f"the assetbus API refused a token for {attempt.dag_id}/{attempt.run_id}/"
                                 f"{attempt.task_id or '(dag run)'}: {response.status_code} {code}: {message}{hint}",
                                 code=code)


def _credentials(access: WorkerAccess, body: dict[str, Any]) -> Credentials:
    """The minter's answer, with Kafka and the topic prefix the connection names (else the API's)."""
    expires = datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00")).timestamp()
    now = time.time()
    kafka, prefix = emitter_settings(access, body)
    return Credentials(body["token"], expires, kafka, prefix,
                       renew_at=max(expires - RENEW_BEFORE_S, now + (expires - now) / 2))


def _airflow_refusal(error: Exception) -> tuple[str, str]:
    """(reason, message) of the api-server's refusal, from the AirflowRuntimeError the supervisor relayed."""
    detail = getattr(getattr(error, "error", None), "detail", None)
    if isinstance(detail, dict):
        body = detail.get("detail")
        inner = body.get("detail") if isinstance(body, dict) else None
        if isinstance(inner, dict) and inner.get("reason"):
            return str(inner["reason"]), str(inner.get("message", ""))
        return f"airflow_{detail.get('status_code') or 'error'}", str(detail.get("message") or error)
    return "airflow_error", str(error)


def emitter_settings(access: WorkerAccess, named_by_api: Mapping[str, Any]) -> tuple[KafkaConnection, str]:
    """The Kafka and topic prefix a worker's emitter uses: the connection's; else `KAFKA_*` and
    `ASSETBUS_TOPIC_PREFIX` from the environment; else what the API names (`bootstrap_servers`, `topic_prefix`)."""
    if access.kafka is not None:
        kafka = access.kafka
    elif os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        kafka = KafkaConnection.from_environ()
    else:
        kafka = KafkaConnection.from_environ(bootstrap_servers=str(named_by_api["bootstrap_servers"]))
    return kafka, access.topic_prefix or os.environ.get("ASSETBUS_TOPIC_PREFIX") or str(named_by_api["topic_prefix"])


_sources: dict[str, TokenSource] = {}
_sources_lock = threading.Lock()


def token_source(conn_id: str = CONN_ID) -> TokenSource:
    """The process's token source for a connection (created on first use; reads the connection at each
    token request)."""
    with _sources_lock:
        source = _sources.get(conn_id)
        if source is None:
            source = _sources[conn_id] = TokenSource(conn_id=conn_id)
        return source
