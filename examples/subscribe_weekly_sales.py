"""A downstream service for `warehouse.weekly_sales` (README example): one handler call per ready week.

Runs until Ctrl-C (or `--seconds N`). Each run is claimed in the database before the handler runs
and marked success/failed after it, so `assetbus runs list` shows the outcome and a repeated
signal is skipped, also after a restart.
"""

import argparse
import asyncio
import contextlib

from assetbus.consumers.readiness import DatabaseLedger
from assetbus.producers.readiness import ReadinessSubscriber
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.settings import Settings


async def handle(signal: ReadinessSignal) -> None:
    days = sorted(e.partition_key or "" for e in signal.events)
    print(f"week {signal.partition_key} (generation {signal.generation}, run {signal.run_id}) is ready: "
          f"days {days[0]} .. {days[-1]} from {signal.events[0].source.dag_id}/{signal.events[0].source.run_id}")


async def main(seconds: float | None) -> None:
    settings = Settings()
    subscriber = ReadinessSubscriber(settings.bootstrap_servers, "warehouse.weekly_sales", handle,
                                     group_id="weekly-sales-report", ledger=DatabaseLedger(settings.database_url),
                                     topics=Topics(prefix=settings.topic_prefix))
    async with subscriber:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(subscriber.run_forever(), seconds)
    print(f"handled {subscriber.stats.processed}, skipped {subscriber.stats.duplicates} repeated signal(s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=None, help="stop after this many seconds")
    asyncio.run(main(parser.parse_args().seconds))
