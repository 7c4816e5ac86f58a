"""The test suite's `AheadPool`: items made ahead, each handed out once, the rest dropped by close()."""

from __future__ import annotations

import asyncio
import gc
import itertools

import pytest

from tests.ahead import AheadPool, LeftBehind
from tests.helpers import wait_for


async def test_items_are_made_ahead_handed_out_once_and_all_dropped_on_close() -> None:
    counter, made, dropped = itertools.count(), [], []

    async def make() -> int:
        made.append(item := next(counter))
        return item

    async def drop(item: int) -> None:
        dropped.append(item)

    pool: AheadPool[int] = AheadPool("numbers", make, drop, ahead=2)

    async def two_ready() -> bool:
        return len(made) >= 2

    await wait_for(two_ready, timeout_s=5, what="two items made before anyone asked")
    first, second = await pool.take(), await pool.take()
    assert (first, second) == (0, 1)
    pool.discard(first)
    pool.close()
    # the discarded one and every one made but never taken; the one still held is the taker's
    assert sorted(dropped) == [item for item in made if item != second]
    assert len(made) >= 4


async def test_a_failure_to_make_is_raised_by_the_take_that_gets_it_and_the_next_take_works() -> None:
    attempts = itertools.count()

    async def make() -> int:
        if next(attempts) == 0:
            raise RuntimeError("database away")
        return 7

    async def drop(item: int) -> None:
        del item

    pool: AheadPool[int] = AheadPool("flaky", make, drop)
    with pytest.raises(RuntimeError, match="database away"):
        await pool.take()
    assert await pool.take() == 7
    pool.close()


async def test_a_drop_that_never_ends_is_left_behind_with_a_warning_naming_it_and_where_it_waits() -> None:
    async def make() -> int:
        return 1

    async def drop(item: int) -> None:
        if item == 13:
            await asyncio.Event().wait()  # a server that stopped answering

    pool: AheadPool[int] = AheadPool("stuck", make, drop)
    pool.discard(12)
    pool.discard(13)
    with pytest.warns(LeftBehind) as caught:
        pool.close(close_s=0.5)
    [message] = [str(warning.message) for warning in caught if warning.category is LeftBehind]
    assert "1 drop(s) still running" in message
    assert "drop 13: _named_drop (ahead.py:" in message
    assert "-> drop (test_ahead_pool.py:" in message
    assert "drop 12" not in message


async def test_a_drop_that_fails_is_raised_by_close(caplog: pytest.LogCaptureFixture) -> None:
    async def make() -> int:
        return 1

    async def drop(item: int) -> None:
        raise RuntimeError(f"cannot drop {item}")

    pool: AheadPool[int] = AheadPool("failing", make, drop)
    pool.discard(5)
    with pytest.raises(RuntimeError, match="cannot drop 5"):
        pool.close(close_s=5)
    del pool
    gc.collect()  # a failure nobody saw is logged when its task is collected (once crashing pytest's compile)
    assert [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()] == []
