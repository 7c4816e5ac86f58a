"""Emit the seven daily partitions of ISO week 2026-W40 of `warehouse.daily_sales` (README example).

Needs a running persister (`assetbus run persister`) and the asset registered. Running it again
is harmless: the same dedupe keys give `duplicate` receipts with the original event ids.
"""

import asyncio
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings

DAILY_SALES = AssetRef(name="warehouse.daily_sales", uri="s3://example/daily_sales/")
AMSTERDAM = ZoneInfo("Europe/Amsterdam")


async def main() -> None:
    settings = Settings()
    token = task_token(settings.signing_key, "sales_export", "backfill-2026-W40", "export_day")
    async with AsyncEmitter(settings.bootstrap_servers, token, topics=Topics(prefix=settings.topic_prefix)) as emitter:
        for offset in range(7):
            day = date(2026, 9, 28) + timedelta(days=offset)
            receipt = await emitter.emit(DAILY_SALES, partition_key=day.isoformat(), dedupe_key=day.isoformat(),
                                         partition_date=datetime.combine(day, time(), AMSTERDAM),
                                         extra={"path": f"s3://example/daily_sales/{day}.parquet"})
            print(f"{day}: {receipt.status.value}, event {receipt.event_id}")


if __name__ == "__main__":
    asyncio.run(main())
