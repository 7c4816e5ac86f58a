"""`assetbus run api --workers 2`: `/metrics` sums the request counters of both workers, whichever answers the
scrape (prometheus-client's multiprocess mode), and the pipeline metrics and build info appear once."""

from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.api.workers import api_workers

ROUTE = {"method": "GET", "route": "/health", "status": "200"}


def _requests(text: str) -> float:
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "assetbus_api_requests_total" and sample.labels == ROUTE)


async def test_the_scraped_request_counter_is_the_total_of_both_workers(infra: Settings, db_url: str,
                                                                        topics: Topics, token_secret: str,
                                                                        tmp_path: Path) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    (shared / "counter_999999.db").write_bytes(b"")  # a file of an earlier run: removed at start, never summed
    sent = 0
    async with api_workers(infra, db_url, topics, token_secret, PROMETHEUS_MULTIPROC_DIR=str(shared)) as api:
        async def both_workers_counted() -> bool:  # fresh connections: the kernel spreads them over the workers
            nonlocal sent
            for _ in range(5):
                async with httpx.AsyncClient(base_url=api.url, timeout=10) as fresh:
                    assert (await fresh.get("/health")).status_code == 200
                sent += 1
            return len(list(shared.glob("counter_*.db"))) == 2

        await wait_for(both_workers_counted, timeout_s=60, what="requests answered by both workers")
        scrapes = []
        for _ in range(6):  # whichever worker answers the scrape, it reports the sum
            async with httpx.AsyncClient(base_url=api.url, timeout=10) as fresh:
                scrapes.append((await fresh.get("/metrics")).text)
    assert api.exit_code == [0]
    assert [_requests(text) for text in scrapes] == [float(sent)] * len(scrapes)
    assert all(text.count("\nassetbus_build_info{") == 1 for text in scrapes), scrapes[0]
    dead_letters = f'\nassetbus_dead_letters_total{{topic="{topics.emissions_dlq}"}} '
    assert all(text.count(dead_letters) == 1 and "# TYPE assetbus_dead_letters_total counter" in text
               for text in scrapes), [[line for line in text.splitlines() if "dead_letters" in line]
                                      for text in scrapes]
