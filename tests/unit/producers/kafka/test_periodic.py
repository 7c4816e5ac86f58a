"""`every` runs an action each interval until cancelled, or, with `while_`, until a round finds it false."""

from __future__ import annotations

import asyncio
import logging

from assetbus.producers.kafka import every


async def test_a_loop_with_while_ends_at_the_first_round_that_finds_it_false() -> None:
    rounds: list[int] = []

    async def action() -> None:
        rounds.append(len(rounds))

    task = every(0.01, action, what="test rounds", log=logging.getLogger("test"), first_after_s=0,
                 while_=lambda: len(rounds) < 3)
    await asyncio.wait_for(task, 5)  # ends on its own, not cancelled
    assert rounds == [0, 1, 2] and task.exception() is None
