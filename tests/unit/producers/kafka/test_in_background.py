"""`in_background` runs a coroutine for the length of a block; with `delay_s` it starts it only that far into
the block, so a block that ends sooner never runs it (the readiness subscriber's lease renewal, per signal)."""

from __future__ import annotations

import asyncio
import warnings

from assetbus.producers.kafka import in_background


async def test_work_runs_while_the_block_runs_and_is_cancelled_when_it_ends() -> None:
    ran, ended = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        ran.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    async with in_background(work(), name="test-work"):
        await asyncio.wait_for(ran.wait(), 5)
    assert ended.is_set()  # cancelled and waited for before the block's exit returned


async def test_a_block_shorter_than_the_delay_never_starts_the_work() -> None:
    runs: list[str] = []

    async def work() -> None:
        runs.append("ran")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine ... was never awaited"
        async with in_background(work(), name="test-work", delay_s=0.5):
            await asyncio.sleep(0)
        await asyncio.sleep(0.6)
    assert runs == []


async def test_a_block_longer_than_the_delay_starts_the_work_after_it() -> None:
    started_at: list[float] = []
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def work() -> None:
        started_at.append(loop.time())
        started.set()
        await asyncio.Event().wait()

    entered = loop.time()
    async with in_background(work(), name="test-work", delay_s=0.05):
        await asyncio.wait_for(started.wait(), 5)
    assert started_at[0] - entered >= 0.05
