"""The SDK's `ApiLedger` against a scripted API: the routes and bodies it sends, retries, refusals."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from assetbus.producers.api_client import ApiUnavailable
from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.readiness import ApiLedger, Claim, ClaimState, FinishResult, LedgerRefused, RunStatus

FAST = RetryPolicy(initial_s=0.001, max_s=0.002)


def ledger_answering(*answers: httpx.Response, seen: list[httpx.Request]) -> ApiLedger:
    queue = list(answers)

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return ApiLedger("http://api.test/", "the-token", retry=FAST, lease_s=30, transport=httpx.MockTransport(respond))


async def test_a_claim_posts_the_consumer_and_lease_with_the_token_and_reads_the_answer() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(
        httpx.Response(200, json={"claimed": True, "status": "running", "attempts": 3, "fence": 3}),
        httpx.Response(200, json={"claimed": False, "status": "running", "attempts": 3, "fence": None}),
        httpx.Response(200, json={"claimed": False, "status": "success", "attempts": 3, "fence": None}),
        seen=seen)
    assert await ledger.claim("run/1", "workers") == Claim(ClaimState.CLAIMED, 3)
    assert await ledger.claim("run/1", "workers") == Claim(ClaimState.HELD)
    assert await ledger.claim("run/1", "workers") == Claim(ClaimState.FINISHED)
    await ledger.stop()
    assert seen[0].method == "POST"
    assert seen[0].url.raw_path == b"/execution/runs/run%2F1/claim"
    assert seen[0].headers["Authorization"] == "Bearer the-token"
    assert "Assetbus-API-Version" in seen[0].headers
    assert json.loads(seen[0].content) == {"consumer": "workers", "lease_s": 30}


async def test_a_renewal_and_a_finish_send_the_fence_and_read_a_refusal() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(200, json={"renewed": True, "lease_until": "2026-12-02T20:00:00Z"}),
                              httpx.Response(200, json={"renewed": False, "lease_until": None}),
                              httpx.Response(200, json={"recorded": True, "reason": None}),
                              httpx.Response(200, json={"recorded": False, "reason": "stale_fence"}), seen=seen)
    assert await ledger.renew("r1", 2) is True
    assert await ledger.renew("r1", 2) is False
    assert await ledger.finish("r1", 2, RunStatus.FAILED, "ValueError: boom") is FinishResult.RECORDED
    assert await ledger.finish("r1", 2, RunStatus.SUCCESS) is FinishResult.STALE_FENCE
    await ledger.stop()
    assert [r.url.path for r in seen] == ["/execution/runs/r1/renew"] * 2 + ["/execution/runs/r1/finish"] * 2
    assert json.loads(seen[0].content) == {"fence": 2, "lease_s": 30}
    assert json.loads(seen[2].content) == {"status": "failed", "detail": "ValueError: boom", "fence": 2}


async def test_an_unavailable_api_is_retried_until_it_answers() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(503), httpx.Response(502),
                              httpx.Response(200, json={"claimed": True, "status": "running", "attempts": 1,
                                                        "fence": 1}),
                              seen=seen)
    assert await ledger.claim("r1", "workers") == Claim(ClaimState.CLAIMED, 1)
    await ledger.stop()
    assert len(seen) == 3


async def test_an_unknown_run_is_skipped_and_a_refusal_raises() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(404, json={"code": "not_found"}),
                              httpx.Response(403, json={"code": "insufficient_scope"}), seen=seen)
    assert await ledger.claim("r1", "workers") == Claim(ClaimState.UNKNOWN)
    with pytest.raises(LedgerRefused, match="403"):
        await ledger.claim("r2", "workers")
    await ledger.stop()


async def test_a_policy_with_a_deadline_gives_up_on_an_api_that_stays_unavailable() -> None:
    def unavailable(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503)

    policy = RetryPolicy(initial_s=0.001, max_s=0.002, timeout_s=0.05)
    ledger = ApiLedger("http://api.test/", "the-token", retry=policy, transport=httpx.MockTransport(unavailable))
    async with asyncio.timeout(5):
        with pytest.raises(ApiUnavailable, match=r"execution API at http://api\.test answered 503") as raised:
            await ledger.claim("r1", "workers")
    assert raised.value.status == 503 and raised.value.retriable
    await ledger.stop()


async def test_a_bounded_policy_counts_attempts_and_a_refused_connection_is_tried_again() -> None:
    seen: list[int] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        seen.append(1)
        if len(seen) < 3:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"claimed": True, "fence": 1, "status": "running"})

    policy = RetryPolicy(initial_s=0.001, max_s=0.002, max_attempts=3)
    ledger = ApiLedger("http://api.test/", "the-token", retry=policy, transport=httpx.MockTransport(flaky))
    assert await ledger.claim("r1", "workers") == Claim(ClaimState.CLAIMED, 1)
    assert len(seen) == 3
    await ledger.stop()
