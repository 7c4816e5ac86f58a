"""The SDK's `ApiLedger` against a scripted API: the routes and bodies it sends, retries, refusals."""

from __future__ import annotations

import json

import httpx
import pytest

from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.readiness import ApiLedger, LedgerRefused, RunStatus

FAST = RetryPolicy(initial_s=0.001, max_s=0.002)


def ledger_answering(*answers: httpx.Response, seen: list[httpx.Request]) -> ApiLedger:
    queue = list(answers)

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return ApiLedger("http://api.test/", "the-token", retry=FAST, transport=httpx.MockTransport(respond))


async def test_a_claim_posts_the_consumer_with_the_token_and_reads_the_answer() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(200, json={"claimed": True, "status": "running", "attempts": 1}),
                              httpx.Response(200, json={"claimed": False, "status": "success", "attempts": 1}),
                              seen=seen)
    assert await ledger.claim("run/1", "workers") is True
    assert await ledger.claim("run/1", "workers") is False
    await ledger.stop()
    assert seen[0].method == "POST"
    assert seen[0].url.raw_path == b"/execution/runs/run%2F1/claim"
    assert seen[0].headers["Authorization"] == "Bearer the-token"
    assert "Assetbus-API-Version" in seen[0].headers
    assert json.loads(seen[0].content) == {"consumer": "workers"}


async def test_a_finish_sends_the_outcome_and_detail() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(200, json={"recorded": True}), seen=seen)
    await ledger.finish("r1", RunStatus.FAILED, "ValueError: boom")
    await ledger.stop()
    assert seen[0].url.path == "/execution/runs/r1/finish"
    assert json.loads(seen[0].content) == {"status": "failed", "detail": "ValueError: boom"}


async def test_an_unavailable_api_is_retried_until_it_answers() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(503), httpx.Response(502),
                              httpx.Response(200, json={"claimed": True, "status": "running", "attempts": 1}),
                              seen=seen)
    assert await ledger.claim("r1", "workers") is True
    await ledger.stop()
    assert len(seen) == 3


async def test_an_unknown_run_is_skipped_and_a_refusal_raises() -> None:
    seen: list[httpx.Request] = []
    ledger = ledger_answering(httpx.Response(404, json={"code": "not_found"}),
                              httpx.Response(403, json={"code": "insufficient_scope"}), seen=seen)
    assert await ledger.claim("r1", "workers") is False
    with pytest.raises(LedgerRefused, match="403"):
        await ledger.claim("r2", "workers")
    await ledger.stop()
