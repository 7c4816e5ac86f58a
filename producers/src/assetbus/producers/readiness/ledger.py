"""Run ledgers: where a subscriber claims a run (a lease with a fencing token) before its handler and records
the outcome after. `ApiLedger` goes through the execution API with a subscriber token; `MemoryLedger` does the
same within one process. The leases, fences and why the API holds them: docs/consumer-dags.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from assetbus.producers.api_client import ExecutionApi
from assetbus.producers.errors import EmitterError
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.kafka.types import Lifecycle

log = logging.getLogger("assetbus.readiness")

SCOPE_RUNS_CLAIM = "runs:claim"
"""The scope of a subscriber token: may claim, renew and finish the runs of the one DAG it names."""

DEFAULT_LEASE_S = 60.0
"""How long a claim holds a run unless renewed: the longest a crashed holder keeps the run from others."""


class RunStatus(str, Enum):
    """A consumer run's status as the ledger records it (the values of `consumer_runs.status`)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


FINISHED = (RunStatus.SUCCESS, RunStatus.FAILED)


class ClaimState(str, Enum):
    """What a claim found."""

    CLAIMED = "claimed"
    """The caller holds the run (with `Claim.fence`): run the handler."""
    HELD = "held"
    """Another holder's lease is live: do not run the handler now; claim again later (it finishes, or
    its lease expires)."""
    FINISHED = "finished"
    """The run has an outcome already: skip its signal."""
    UNKNOWN = "unknown"
    """The ledger does not know the run: skip its signal."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A ledger's answer to a claim."""

    state: ClaimState
    fence: int = 0
    """The fencing token of this holding (when `CLAIMED`): pass it to `renew` and `finish`."""

    @property
    def claimed(self) -> bool:
        return self.state is ClaimState.CLAIMED


class FinishResult(str, Enum):
    """What a reported outcome did."""

    RECORDED = "recorded"
    """The run's outcome is stored."""
    STALE_FENCE = "stale_fence"
    """Refused, nothing changed: the fence no longer holds the run (its lease expired and another claim
    took it, or it has finished already)."""


class LedgerRefused(EmitterError):
    """The ledger refused the subscriber for good (a bad token, a run of another DAG): retrying cannot help."""


class RunLedger(Protocol):
    lease_s: float
    """How long a claim or a renewal holds a run."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def claim(self, run_id: str, consumer: str) -> Claim:
        """Take the run's lease for `consumer` (see `ClaimState` for the answers)."""
        ...
    async def renew(self, run_id: str, fence: int) -> bool:
        """Extend the lease of the holder of `fence` by `lease_s`. False: that fence lost the run."""
        ...
    async def finish(self, run_id: str, fence: int, status: RunStatus, detail: str | None = None) -> FinishResult:
        """Record the outcome of the holding `fence`; refused (`STALE_FENCE`) once that holding has lost the run."""
        ...


class ApiLedger:
    """Claims, renewals and outcomes through the execution API; `LedgerRefused` on a 4xx refusal. While the API
    is away a call is retried per `retry` (default: **no bound**, a signal waits rather than being skipped); a
    bounded policy gives up with `ApiUnavailable`, and the subscriber rewinds the batch."""

    def __init__(self, api_url: str, token: str, *, timeout_s: float = 10.0, retry: RetryPolicy | None = None,
                 lease_s: float = DEFAULT_LEASE_S, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.lease_s = lease_s
        self._token = token
        self._timeout_s = timeout_s
        self._retry = retry or RetryPolicy(initial_s=0.2, max_s=5.0)
        self._transport = transport
        self._api: ExecutionApi | None = None

    async def start(self) -> None:
        if self._api is None:
            self._api = ExecutionApi(self.api_url, self._token, timeout_s=self._timeout_s, retry=self._retry,
                                     transport=self._transport)

    async def stop(self) -> None:
        if self._api is not None:
            await self._api.aclose()
            self._api = None

    async def claim(self, run_id: str, consumer: str) -> Claim:
        answer = await self._post(run_id, "claim", {"consumer": consumer, "lease_s": self.lease_s})
        if answer is None:
            log.warning("run %s is unknown to the API at %s; skipping its signal", run_id, self.api_url)
            return Claim(ClaimState.UNKNOWN)
        if answer["claimed"]:
            return Claim(ClaimState.CLAIMED, int(answer.get("fence") or answer["attempts"]))  # an API before leases
        return Claim(ClaimState.FINISHED if RunStatus(answer["status"]) in FINISHED else ClaimState.HELD)

    async def renew(self, run_id: str, fence: int) -> bool:
        answer = await self._post(run_id, "renew", {"fence": fence, "lease_s": self.lease_s})
        return answer is not None and bool(answer["renewed"])

    async def finish(self, run_id: str, fence: int, status: RunStatus, detail: str | None = None) -> FinishResult:
        answer = await self._post(run_id, "finish", {"status": status.value, "detail": detail, "fence": fence})
        return FinishResult.RECORDED if answer is not None and answer["recorded"] else FinishResult.STALE_FENCE

    async def _post(self, run_id: str, action: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer's JSON; None on 404 (an unknown run). The client retries transport errors and 5xx."""
        await self.start()
        assert self._api is not None
        response = await self._api.request("POST", f"/execution/runs/{quote(run_id, safe='')}/{action}",
                                           repeatable=True, json=body)
        if response.status_code == 404:
            return None
        if not response.is_success:
            raise LedgerRefused(f"{action} of run {run_id} refused by {self.api_url}: "
                                f"{response.status_code} {response.text[:500]}")
        answer: dict[str, Any] = response.json()
        return answer


@dataclass(slots=True)
class _Holding:
    status: RunStatus
    fence: int = 0
    lease_until: float = 0.0


class MemoryLedger(Lifecycle):
    """The same leases and fences within this process (`clock`: monotonic seconds); outcomes in `outcomes`."""

    def __init__(self, *, lease_s: float = DEFAULT_LEASE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease_s = lease_s
        self.outcomes: dict[str, RunStatus] = {}
        self._clock = clock
        self._runs: dict[str, _Holding] = {}

    async def claim(self, run_id: str, consumer: str) -> Claim:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Holding(RunStatus.QUEUED)
        elif run.status in FINISHED:
            return Claim(ClaimState.FINISHED)
        now = self._clock()
        if run.status is RunStatus.RUNNING and run.lease_until > now:
            return Claim(ClaimState.HELD)
        run.status, run.fence, run.lease_until = RunStatus.RUNNING, run.fence + 1, now + self.lease_s
        self.outcomes[run_id] = RunStatus.RUNNING
        return Claim(ClaimState.CLAIMED, run.fence)

    async def renew(self, run_id: str, fence: int) -> bool:
        run = self._holding(run_id, fence)
        if run is None:
            return False
        run.lease_until = self._clock() + self.lease_s
        return True

    async def finish(self, run_id: str, fence: int, status: RunStatus, detail: str | None = None) -> FinishResult:
        run = self._holding(run_id, fence)
        if run is None:
            return FinishResult.STALE_FENCE
        run.status = self.outcomes[run_id] = status
        return FinishResult.RECORDED

    def _holding(self, run_id: str, fence: int) -> _Holding | None:
        """The run if `fence` holds it (running, not claimed again since; an expired lease nobody took counts)."""
        run = self._runs.get(run_id)
        return run if run is not None and run.status is RunStatus.RUNNING and run.fence == fence else None
