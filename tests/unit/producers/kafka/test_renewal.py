"""The renewable producer: a send the broker refused (its sequence broken) makes the next send start a new one."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, OutOfOrderSequenceNumber, TopicAuthorizationFailedError

from assetbus.producers.kafka import BatchSender, KafkaConnection, create_producer
from assetbus.producers.kafka.renewal import RenewableProducer, breaks_sequence


class FakeProducer:
    """`create_batch` from a real (never started) producer; every batch's future fails with `fails_with`."""

    def __init__(self, fails_with: BaseException | None = None, start_fails: BaseException | None = None) -> None:
        self._real = create_producer(KafkaConnection())
        self.fails_with = fails_with
        self.start_fails = start_fails
        self.started = self.stopped = False
        self.sent = 0

    async def start(self) -> None:
        if self.start_fails is not None:
            raise self.start_fails
        self.started = True

    async def stop(self) -> None:
        self.stopped = True

    def create_batch(self) -> Any:
        return self._real.create_batch()

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        self.sent += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.fails_with is not None:
            future.set_exception(self.fails_with)
        else:
            future.set_result(None)
        return future


def test_a_refusal_or_an_out_of_order_sequence_breaks_the_sequence_and_a_lost_connection_does_not() -> None:
    assert breaks_sequence(TopicAuthorizationFailedError("t"))
    assert breaks_sequence(OutOfOrderSequenceNumber())
    assert not breaks_sequence(KafkaConnectionError())


async def test_the_sender_starts_a_new_producer_before_the_send_after_a_refused_batch() -> None:
    made = [FakeProducer(fails_with=TopicAuthorizationFailedError("t")), FakeProducer()]
    renewed: list[Any] = []
    renewable = RenewableProducer(lambda: cast(AIOKafkaProducer, made.pop(0)), on_renewed=renewed.append)
    first = cast(FakeProducer, renewable.producer)
    await renewable.start()
    sender = BatchSender(renewable)
    sender.put("t", 0, b"k", b"v")
    (delivery,) = await sender.send_open()
    with pytest.raises(TopicAuthorizationFailedError):
        await delivery.future
    await asyncio.sleep(0)  # the done callbacks
    assert renewable.broken

    sender.put("t", 0, b"k", b"v")
    (again,) = await sender.send_open()
    await again.future
    second = cast(FakeProducer, renewable.producer)
    assert second is not first and first.stopped and second.started and second.sent == 1
    assert (renewable.broken, renewed) == (False, [second])


async def test_a_new_producer_that_cannot_start_drops_the_open_batches_and_is_tried_again() -> None:
    made = [FakeProducer(fails_with=OutOfOrderSequenceNumber()),
            FakeProducer(start_fails=TopicAuthorizationFailedError("t")), FakeProducer()]
    renewable = RenewableProducer(lambda: cast(AIOKafkaProducer, made.pop(0)))
    await renewable.start()
    sender = BatchSender(renewable)
    sender.put("t", 0, b"k", b"v")
    (delivery,) = await sender.send_open()
    with pytest.raises(OutOfOrderSequenceNumber):
        await delivery.future
    await asyncio.sleep(0)

    sender.put("t", 0, b"k", b"v")
    with pytest.raises(TopicAuthorizationFailedError):
        await sender.send_open()
    assert renewable.broken

    sender.put("t", 0, b"k", b"v")  # the owner puts them again
    (again,) = await sender.send_open()
    await again.future
    assert again.records == 1, "the batch of the failed send_open was dropped, not sent with this one"
    assert (renewable.broken, made, cast(FakeProducer, renewable.producer).sent) == (False, [], 1)
