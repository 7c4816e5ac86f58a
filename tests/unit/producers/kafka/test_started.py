"""`started`: a Kafka client is stopped when its block exits, and also when its start fails."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from assetbus.infra.ports import free_port
from assetbus.producers.kafka import started


@pytest.mark.parametrize("client", [AIOKafkaConsumer, AIOKafkaProducer])
def test_a_client_whose_start_fails_is_stopped(client: type[AIOKafkaConsumer | AIOKafkaProducer],
                                               caplog: pytest.LogCaptureFixture) -> None:
    gc.collect()  # what earlier tests left behind is collected now, not in the check below

    async def start_on_nothing() -> None:
        async with started(client(bootstrap_servers=f"127.0.0.1:{free_port()}", request_timeout_ms=2_000)):
            pytest.fail("a client with no broker behind it started")

    with pytest.raises(KafkaConnectionError):
        asyncio.run(start_on_nothing())
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()  # a client left open by the failed start says so when collected
    assert not [r.getMessage() for r in caplog.records if "Unclosed AIOKafka" in r.getMessage()]
