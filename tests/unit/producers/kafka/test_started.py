"""`started`: a Kafka client is stopped when its block exits, and also when its start fails."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from assetbus.infra.ports import free_port
from assetbus.producers.kafka import started


@pytest.mark.parametrize("client", [AIOKafkaConsumer, AIOKafkaProducer])
def test_a_client_whose_start_fails_is_stopped(client: type[AIOKafkaConsumer | AIOKafkaProducer]) -> None:
    made: list[AIOKafkaConsumer | AIOKafkaProducer] = []

    async def start_on_nothing() -> None:
        made.append(client(bootstrap_servers=f"127.0.0.1:{free_port()}", request_timeout_ms=2_000))
        async with started(made[0]):
            pytest.fail("a client with no broker behind it started")

    with pytest.raises(KafkaConnectionError):
        asyncio.run(start_on_nothing())
    # `_closed` is what aiokafka's __del__ reads to log "Unclosed AIOKafka…" when the client is collected
    assert made[0]._closed is True
