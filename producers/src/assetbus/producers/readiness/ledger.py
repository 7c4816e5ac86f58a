"""Run ledgers: where a subscriber claims a run before its handler and records the outcome after.

`ApiLedger` (the default for downstream services) claims and finishes runs through the execution
API with a subscriber token (`assetbus token subscriber`: scope `runs:claim`, one DAG). The API runs
one atomic `UPDATE ... WHERE status NOT IN ('success', 'failed')` on `consumer_runs`, so a
re-published signal, a second subscriber process or a restarted one never runs a finished run again,
and `assetbus runs list` shows each run's outcome. The service holds no database credentials.
`MemoryLedger` dedupes within one process only (tests, scripts).
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.state.protocol import default_headers

log = logging.getLogger("assetbus.readiness")

SCOPE_RUNS_CLAIM = "runs:claim"
"""The scope of a subscriber token: may claim and finish the runs of the one DAG it names."""


class RunStatus(str, Enum):
    """A consumer run's status as the ledger records it (the values of `consumer_runs.status`)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


class LedgerRefused(EmitterError):
    """The ledger refused the subscriber for good (a bad token, a run of another DAG): retrying cannot help."""


class RunLedger(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def claim(self, run_id: str, consumer: str) -> bool:
        """True: run the handler. False: the run has finished already (or is unknown): skip it."""
        ...
    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None: ...


class ApiLedger:
    """Claims and outcomes through the execution API; waits (with back-off) while the API is unreachable
    or unavailable (5xx), raises `LedgerRefused` on a refusal (401, 403, 4xx)."""

    def __init__(self, api_url: str, token: str, *, timeout_s: float = 10.0, retry: RetryPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._timeout_s = timeout_s
        self._retry = retry or RetryPolicy(initial_s=0.2, max_s=5.0)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(base_url=self.api_url, headers=default_headers(self._token),
                                             timeout=self._timeout_s, transport=self._transport)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def claim(self, run_id: str, consumer: str) -> bool:
        answer = await self._post(run_id, "claim", {"consumer": consumer})
        if answer is None:
            log.warning("run %s is unknown to the API at %s; skipping its signal", run_id, self.api_url)
            return False
        return bool(answer["claimed"])

    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None:
        answer = await self._post(run_id, "finish", {"status": status.value, "detail": detail})
        if answer is None or not answer["recorded"]:
            log.warning("run %s was not running when its outcome %s was reported", run_id, status.value)

    async def _post(self, run_id: str, action: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer's JSON; None on 404 (an unknown run). Retries transport errors and 5xx answers."""
        await self.start()
        assert self._client is not None
        path = f"/execution/runs/{quote(run_id, safe='')}/{action}"
        backoff = self._retry.backoff()
        while True:
            try:
                response = await self._client.post(path, json=body)
            except httpx.TransportError as error:
                problem = f"{type(error).__name__}: {error}"
            else:
                if response.status_code == 404:
                    return None
                if response.is_success:
                    answer: dict[str, Any] = response.json()
                    return answer
                if response.status_code < 500 and response.status_code != 429:
                    raise LedgerRefused(f"{action} of run {run_id} refused by {self.api_url}: "
                                        f"{response.status_code} {response.text[:500]}")
                problem = f"HTTP {response.status_code}"
            delay = await backoff.sleep()
            log.warning("run ledger at %s unavailable (%s); retried after %.1fs", self.api_url, problem, delay)


class MemoryLedger:
    """Dedupe by run id within this process; outcomes are kept in `outcomes`."""

    def __init__(self) -> None:
        self.outcomes: dict[str, RunStatus] = {}

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def claim(self, run_id: str, consumer: str) -> bool:
        if self.outcomes.get(run_id) in (RunStatus.SUCCESS, RunStatus.FAILED):
            return False
        self.outcomes[run_id] = RunStatus.RUNNING
        return True

    async def finish(self, run_id: str, status: RunStatus, detail: str | None = None) -> None:
        self.outcomes[run_id] = status
