"""Emitter tokens for Airflow attempts, asked of the assetbus execution API (task code holds no key).

`ASSETBUS_API_URL` (default http://127.0.0.1:8321) names the API. A token is asked once per
attempt and process, and again shortly before it expires. Kafka's bootstrap servers and the topic
prefix come from `KAFKA_BOOTSTRAP_SERVERS` / `ASSETBUS_TOPIC_PREFIX` when set, else from the
API's answer (the API knows its installation).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import httpx

from assetbus.producers.airflow.attempt import Attempt
from assetbus.producers.errors import EmitterError

ENV_API_URL = "ASSETBUS_API_URL"
DEFAULT_API_URL = "http://127.0.0.1:8321"
ROUTE = "/airflow/tokens"
RENEW_BEFORE_S = 120.0
RETRIES = 5


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
    bootstrap_servers: str
    topic_prefix: str


def _reason(response: httpx.Response) -> tuple[str | None, str]:
    try:
        body = response.json()
        return body.get("code"), str(body.get("message", body))
    except ValueError:
        return None, response.text[:300]


class TokenSource:
    """Asks the API for tokens and caches them per attempt (thread-safe)."""

    def __init__(self, api_url: str | None = None, *, timeout_s: float = 10.0) -> None:
        self.api_url = (api_url or os.environ.get(ENV_API_URL) or DEFAULT_API_URL).rstrip("/")
        self.timeout_s = timeout_s
        self._cache: dict[tuple[object, ...], Credentials] = {}
        self._lock = threading.Lock()

    def credentials(self, attempt: Attempt) -> Credentials:
        with self._lock:
            cached = self._cache.get(attempt.key)
            if cached is not None and cached.expires_at - RENEW_BEFORE_S > time.time():
                return cached
            fresh = self._ask(attempt)
            self._cache[attempt.key] = fresh
            return fresh

    def _ask(self, attempt: Attempt) -> Credentials:
        delay = 0.5
        for remaining in range(RETRIES - 1, -1, -1):
            try:
                response = httpx.post(self.api_url + ROUTE, json=attempt.request(), timeout=self.timeout_s)
            except httpx.HTTPError as error:
                failure = TokenRequestFailed(f"the assetbus API at {self.api_url} did not answer: {error}",
                                             retriable=True)
            else:
                if response.status_code == 200:
                    body = response.json()
                    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00")).timestamp()
                    return Credentials(body["token"], expires,
                                       os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or body["bootstrap_servers"],
                                       os.environ.get("ASSETBUS_TOPIC_PREFIX") or body["topic_prefix"])
                code, message = _reason(response)
                failure = TokenRequestFailed(f"the assetbus API refused a token for {attempt.dag_id}/"
                                             f"{attempt.run_id}/{attempt.task_id or '(dag run)'}: "
                                             f"{response.status_code} {code}: {message}", code=code,
                                             retriable=response.status_code >= 500)
            if not failure.retriable or remaining == 0:
                raise failure
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")


_source: TokenSource | None = None


def token_source() -> TokenSource:
    """The process's token source (created on first use, from the environment)."""
    global _source
    if _source is None:
        _source = TokenSource()
    return _source
