"""The one client of the execution API in the SDK, with one retry rule. The state client, the run ledger and
the Airflow token source send their requests through it (async `ExecutionApi`, sync `SyncExecutionApi`).

The rule, the same for every call:

- a connection that could not be opened (nothing was sent) is tried again;
- a request that was sent but got no answer, or a `5xx` / `429` answer, is tried again only when the call
  may be repeated (`repeatable=True`: a claim, a token request); a state write is not repeated blindly,
  its caller hears `ApiUnavailable`;
- the delays and the bound come from a `RetryPolicy` (jittered back-off; `timeout_s` and `max_attempts`);
- every other answer (`2xx`, `4xx`) is the caller's to read.

Each request carries the bearer token and the API version this SDK was written for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any

import httpx

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.retry import RetryPolicy

__all__ = ["API_RETRY", "API_VERSION", "ApiUnavailable", "ExecutionApi", "SyncExecutionApi", "api_headers"]

API_VERSION = "2026-11-29"
"""The API version this SDK was written for (sent as `Assetbus-API-Version`)."""

API_RETRY = RetryPolicy(initial_s=0.2, max_s=5.0, max_attempts=5)
"""The default policy: five attempts, 0.2 s doubling to 5 s apart (jittered)."""


class ApiUnavailable(EmitterError):
    """The execution API could not be reached, or answered 5xx/429, and the policy gave up (or the call may not
    be repeated). `status` is the last answer's code (None: no answer); `response` the last answer, if any."""

    retriable = True

    def __init__(self, message: str, *, status: int | None = None, response: httpx.Response | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.response = response


def api_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Assetbus-API-Version": API_VERSION}


def _again(outcome: httpx.Response | httpx.HTTPError, repeatable: bool) -> bool:
    """The rule: whether this outcome of one attempt is tried again."""
    if isinstance(outcome, httpx.ConnectError):
        return True  # nothing was sent
    if isinstance(outcome, httpx.HTTPError):
        return repeatable and isinstance(outcome, httpx.TransportError)
    return repeatable and (outcome.status_code >= 500 or outcome.status_code == 429)


class _Call:
    """One call: what is sent, and the rule and the policy over its attempts (after each outcome, wait or be
    done)."""

    def __init__(self, api: ExecutionApi | SyncExecutionApi, repeatable: bool, json: Any,
                 params: Mapping[str, str] | None, headers: Mapping[str, str] | None) -> None:
        self.api = api
        self.repeatable = repeatable
        self.backoff = api.retry.backoff()
        self.started = time.monotonic()
        self.sent: dict[str, Any] = {"params": dict(params or {}),
                                     "headers": {**api_headers(api.token), **(headers or {})}}
        if json is not None:
            self.sent["json"] = json

    def after(self, outcome: httpx.Response | httpx.HTTPError) -> float | httpx.Response:
        """The wait before the next attempt, or the call's answer (2xx, 4xx, or the 5xx of a call that may not
        be repeated); `ApiUnavailable` when the API stayed away, within the policy."""
        if _again(outcome, self.repeatable):
            delay = self.backoff.next_delay()
            policy = self.api.retry
            spent = policy.max_attempts is not None and self.backoff.attempts >= policy.max_attempts
            if policy.timeout_s is not None:
                spent = spent or time.monotonic() - self.started + delay > policy.timeout_s
            if not spent:
                return delay
        elif isinstance(outcome, httpx.Response):
            return outcome
        if isinstance(outcome, httpx.Response):
            raise ApiUnavailable(f"the execution API at {self.api.base_url} answered {outcome.status_code}: "
                                 f"{outcome.text[:300]}", status=outcome.status_code, response=outcome)
        raise ApiUnavailable(f"the execution API at {self.api.base_url} cannot be reached: "
                             f"{type(outcome).__name__}: {outcome}")


class ExecutionApi(contextlib.AbstractAsyncContextManager["ExecutionApi"]):
    """Async requests to the execution API as one token (`async with`, or `aclose()`)."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 10.0, retry: RetryPolicy = API_RETRY,
                 http: httpx.AsyncClient | None = None, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry
        self._http = http or httpx.AsyncClient(base_url=self.base_url, timeout=timeout_s, transport=transport)

    async def request(self, method: str, path: str, *, repeatable: bool, json: Any = None,
                      params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
                      ) -> httpx.Response:
        """The answer (2xx or 4xx, or 5xx of a call that may not be repeated); `ApiUnavailable` when the API
        stayed away, within the policy."""
        call = _Call(self, repeatable, json, params, headers)
        while True:
            outcome: httpx.Response | httpx.HTTPError
            try:
                outcome = await self._http.request(method, path, **call.sent)
            except httpx.HTTPError as error:
                outcome = error
            if isinstance(step := call.after(outcome), httpx.Response):
                return step
            await asyncio.sleep(step)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class SyncExecutionApi(contextlib.AbstractContextManager["SyncExecutionApi"]):
    """The same, blocking (task code without an event loop, Airflow's workers)."""

    def __init__(self, base_url: str, token: str, *, timeout_s: float = 10.0, retry: RetryPolicy = API_RETRY,
                 http: httpx.Client | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry
        self._http = http or httpx.Client(base_url=self.base_url, timeout=timeout_s)

    def request(self, method: str, path: str, *, repeatable: bool, json: Any = None,
                params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None) -> httpx.Response:
        call = _Call(self, repeatable, json, params, headers)
        while True:
            outcome: httpx.Response | httpx.HTTPError
            try:
                outcome = self._http.request(method, path, **call.sent)
            except httpx.HTTPError as error:
                outcome = error
            if isinstance(step := call.after(outcome), httpx.Response):
                return step
            time.sleep(step)

    def close(self) -> None:
        self._http.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
