"""The in-flight bound: a submitter waits while every slot holds a command without a receipt."""

from __future__ import annotations

import asyncio

from assetbus.producers.dispatch import _Slots


async def test_a_full_set_of_slots_makes_the_next_taker_wait_until_one_is_given_back() -> None:
    slots = _Slots(2)
    await slots.take()
    await slots.take()
    third = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    assert not third.done()
    slots.give()
    await asyncio.wait_for(third, 1)
    assert slots.free == 0


async def test_a_cancelled_waiter_does_not_swallow_a_slot() -> None:
    slots = _Slots(1)
    await slots.take()
    waiter = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    slots.give()
    assert slots.free == 1


async def test_a_waiter_is_woken_only_once_a_run_of_slots_is_free_again() -> None:
    slots = _Slots(64)  # resumes at 4 free slots
    for _ in range(64):
        await slots.take()
    waiter = asyncio.create_task(slots.take())
    await asyncio.sleep(0)
    for _ in range(3):
        slots.give()
    await asyncio.sleep(0)
    assert not waiter.done()
    slots.give()
    await asyncio.wait_for(waiter, 1)
    assert slots.free == 3
