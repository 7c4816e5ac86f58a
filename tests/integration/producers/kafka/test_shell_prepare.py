"""The pipelined shell prepares batch N+1 while batch N is handled, and loses nothing when either fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from assetbus.producers.kafka.retry import RetryPolicy
from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.producers.kafka.test_shell_commits import committed_offsets, ends_of, produce

RECORDS = 400


def settings(topics: Topics, group: str) -> ConsumerSettings:
    return ConsumerSettings(topics=(topics.emissions,), group_id=group, max_records=40, fetch_max_wait_ms=10,
                            batch_timeout_ms=10)


def holds(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def condition() -> bool:
        return check()
    return condition


async def run_until_handled(shell: ServiceShell[list[Any]], handled: list[list[Any]]) -> None:
    """Start the shell, wait until it handled and committed every record, stop it."""
    await shell.start()
    try:
        await wait_for(holds(lambda: sum(map(len, handled)) >= RECORDS and shell.batches == len(handled)),
                       what="every batch handled and committed")
    finally:
        await shell.stop()


def offsets(batches: list[list[Any]]) -> list[tuple[int, int]]:
    return sorted((record.partition, record.offset) for batch in batches for record in batch)


async def test_the_next_batch_is_prepared_while_this_one_is_handled(infra: Settings, topics: Topics) -> None:
    await produce(infra, topics.emissions, RECORDS)
    prepared: list[list[Any]] = []
    handled: list[list[Any]] = []
    overlapped = 0

    async def prepare(records: list[Any]) -> list[Any]:
        prepared.append(records)
        return records

    async def handle(records: list[Any]) -> None:
        nonlocal overlapped
        seen = len(prepared)
        # a handler that waits (like a statement) until the shell has prepared the next batch, if there is one
        try:
            await wait_for(holds(lambda: len(prepared) > seen), timeout_s=0.5, interval=0.005,
                           what="the next batch prepared")
            overlapped += 1
        except AssertionError:  # the last batch: nothing more to prepare
            pass
        handled.append(records)

    group = f"{topics.prefix}-pipelined"
    shell: ServiceShell[list[Any]] = ServiceShell(infra.kafka, settings(topics, group), handle, prepare=prepare,
                                                      )
    await run_until_handled(shell, handled)
    assert offsets(handled) == offsets(prepared[:len(handled)])  # handled once each, in fetch order
    assert len(set(offsets(handled))) == RECORDS
    assert overlapped >= len(handled) // 2, f"only {overlapped} of {len(handled)} batches overlapped"
    assert await committed_offsets(infra, topics.emissions, group) == ends_of(handled)


async def test_a_failed_batch_takes_the_prepared_one_back_with_it(infra: Settings, topics: Topics) -> None:
    await produce(infra, topics.emissions, RECORDS)
    handled: list[list[Any]] = []
    failures = {"handle": 2, "prepare": 2}

    async def prepare(records: list[Any]) -> list[Any]:
        if len(handled) >= 3 and failures["prepare"]:
            failures["prepare"] -= 1
            raise RuntimeError("preparing failed")
        return records

    async def handle(records: list[Any]) -> None:
        if len(handled) >= 1 and failures["handle"]:
            failures["handle"] -= 1
            raise RuntimeError("handling failed")
        handled.append(records)

    group = f"{topics.prefix}-pipelined-fail"
    shell: ServiceShell[list[Any]] = ServiceShell(
        infra.kafka, settings(topics, group), handle, prepare=prepare,
        retry=RetryPolicy(initial_s=0.01, max_s=0.05))
    await shell.start()
    try:
        await wait_for(holds(lambda: len(set(offsets(handled))) >= RECORDS and shell.batches == len(handled)),
                       what="every record handled after the failures, and committed")
    finally:
        await shell.stop()
    assert failures == {"handle": 0, "prepare": 0}
    assert shell.failures == 4
    assert len(offsets(handled)) == RECORDS  # nothing handled twice: a failed batch was never handled
    assert await committed_offsets(infra, topics.emissions, group) == ends_of(handled)


async def test_stop_releases_a_prepared_batch_unhandled(infra: Settings, topics: Topics) -> None:
    await produce(infra, topics.emissions, RECORDS)
    handled: list[list[Any]] = []
    gate = asyncio.Event()

    async def prepare(records: list[Any]) -> list[Any]:
        return records

    async def handle(records: list[Any]) -> None:
        await gate.wait()
        handled.append(records)

    group = f"{topics.prefix}-pipelined-stop"
    shell: ServiceShell[list[Any]] = ServiceShell(infra.kafka, settings(topics, group), handle, prepare=prepare,
                                                      )
    await shell.start()
    await wait_for(holds(lambda: shell.offsets._holds == 2), what="one batch handled, the next one prepared")
    stopping = asyncio.create_task(shell.stop())
    await asyncio.sleep(0)
    gate.set()
    await asyncio.wait_for(stopping, 30)
    assert len(handled) == 1  # the prepared batch was not handled after stop()
    assert await committed_offsets(infra, topics.emissions, group) == ends_of(handled)


async def test_a_batch_below_pipeline_from_is_handled_before_the_next_fetch(infra: Settings, topics: Topics) -> None:
    await produce(infra, topics.emissions, RECORDS)
    prepared: list[list[Any]] = []
    handled: list[list[Any]] = []
    during: list[int] = []

    async def prepare(records: list[Any]) -> list[Any]:
        prepared.append(records)
        return records

    async def handle(records: list[Any]) -> None:
        seen = len(prepared)
        await asyncio.sleep(0.01)  # a statement's round trip: room for the shell to fetch ahead if it would
        during.append(len(prepared) - seen)
        handled.append(records)

    group = f"{topics.prefix}-pipelined-small"
    shell: ServiceShell[list[Any]] = ServiceShell(infra.kafka, settings(topics, group), handle, prepare=prepare,
                                                      pipeline_from=41)
    await run_until_handled(shell, handled)
    assert during and set(during) == {0}  # nothing was fetched and prepared while a batch was handled
    assert len(set(offsets(handled))) == RECORDS
