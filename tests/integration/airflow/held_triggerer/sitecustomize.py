"""The held triggerer of test_triggers: on PYTHONPATH (with HOLD_ENV set), Python imports this at start-up.

HOLD_ENV names a file holding a signal's run id. Once the triggerer has taken the event of that signal,
`AssetbusReadinessTrigger` writes `held` into the file and blocks the triggerer's event loop, before Airflow's
database has the event: the window a kill -9 of the triggerer must not lose a signal in.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any

HOLD_ENV = "ASSETBUS_TRIGGER_TEST_HOLD"
FOLDER = os.path.dirname(os.path.abspath(__file__))


def _hold_after_handoff(run_id: str) -> None:
    path = os.environ[HOLD_ENV]
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as file:
        if file.read().strip() != run_id:
            return
    with open(path, "w", encoding="utf-8") as file:
        file.write("held")
    while True:  # blocks the event loop on purpose: the event stays in the runner's memory until a kill
        time.sleep(1.0)


def _install() -> None:
    from assetbus.producers.airflow.triggers import AssetbusReadinessTrigger

    handing_over = AssetbusReadinessTrigger.filter_shared_stream

    async def held(self: AssetbusReadinessTrigger, shared_stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for event in handing_over(self, shared_stream):
            yield event
            _hold_after_handoff(event.payload["run_id"])

    AssetbusReadinessTrigger.filter_shared_stream = held  # type: ignore[method-assign]


if os.environ.get(HOLD_ENV):
    _install()
