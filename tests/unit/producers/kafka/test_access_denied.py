"""An authorization refusal becomes one line naming the principal, the operation and the resource; the refusals
that stop a service's work are held until the work succeeds again."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    NodeNotReadyError,
    TopicAuthorizationFailedError,
)

from assetbus.producers.kafka import KafkaConnection, SecurityProtocol, cancel_and_wait, every
from assetbus.producers.kafka.access import AccessRefusals, KafkaAccessDenied, access_denied, naming_refusals

SCRAM = KafkaConnection(bootstrap_servers=("k:9096",), security_protocol=SecurityProtocol.SASL_SSL,
                        sasl_mechanism="SCRAM-SHA-512", sasl_username="orders-scheduler", sasl_password="secret")


def test_a_refused_topic_names_the_principal_and_the_topics_without_the_password() -> None:
    denied = access_denied(TopicAuthorizationFailedError(), SCRAM, group_id="g", topics=("orders.asset-events",))
    assert str(denied) == ("Kafka at k:9096 over SASL_SSL as orders-scheduler (SCRAM-SHA-512) denies "
                           "User:orders-scheduler Read on topic 'orders.asset-events': add that ACL "
                           "(`assetbus topics plan` lists the ACLs of each service)")


def test_a_refused_group_names_it_and_other_errors_are_not_refusals() -> None:
    denied = access_denied(GroupAuthorizationFailedError(), KafkaConnection(), group_id="orders-scheduler",
                           topics=("t",))
    assert denied is not None and denied.resource == "group 'orders-scheduler'" and denied.principal == "this client"
    assert access_denied(NodeNotReadyError(), SCRAM, group_id="g", topics=("t",)) is None


def test_a_producers_refusal_names_the_topics_the_broker_named_and_the_operation() -> None:
    denied = access_denied(TopicAuthorizationFailedError({"orders.readiness.b", "orders.readiness.a"}), SCRAM,
                           topics=("ignored",), operation="Write")
    assert denied is not None and (denied.operation, denied.resource) == (
        "Write", "topic 'orders.readiness.a', 'orders.readiness.b'")


def test_an_idempotent_producer_refused_its_producer_id_names_the_topic_it_needs_write_on() -> None:
    denied = access_denied(ClusterAuthorizationFailedError(), SCRAM, topics=("orders.emissions",), operation="Write")
    assert denied is not None and denied.resource.startswith("topic 'orders.emissions' (an idempotent producer")
    assert access_denied(ClusterAuthorizationFailedError(), SCRAM) is None  # no topic to name: not ours to say


def test_refusals_are_held_while_the_work_is_refused_and_cleared_by_its_next_success() -> None:
    refusals = AccessRefusals()
    with pytest.raises(KafkaAccessDenied), refusals.watching("republishing"), \
            naming_refusals(SCRAM, "Read", topics=("orders.readiness.d",)):
        raise TopicAuthorizationFailedError()
    assert refusals.detail() == ("republishing: Kafka at k:9096 over SASL_SSL as orders-scheduler (SCRAM-SHA-512) "
                                 "denies User:orders-scheduler Read on topic 'orders.readiness.d': add that ACL "
                                 "(`assetbus topics plan` lists the ACLs of each service)")
    with pytest.raises(NodeNotReadyError), refusals.watching("republishing"):  # another fault: still refused
        raise NodeNotReadyError()
    assert list(refusals.current()) == ["republishing"]
    with refusals.watching("republishing"):
        pass
    assert refusals.current() == {} and refusals.detail() == ""


async def test_a_periodic_round_refused_is_recorded_until_a_round_succeeds() -> None:
    refusals, rounds, allowed = AccessRefusals(), asyncio.Queue[int](), asyncio.Event()

    async def republish() -> None:
        await rounds.put(rounds.qsize())
        if not allowed.is_set():
            with naming_refusals(SCRAM, "Read", topics=("orders.readiness.d",)):
                raise TopicAuthorizationFailedError()

    task = every(0.01, republish, what="republishing", log=logging.getLogger("test"), first_after_s=0,
                 refusals=refusals)
    try:
        await asyncio.wait_for(rounds.get(), 5)
        await asyncio.wait_for(rounds.get(), 5)  # the first round's refusal is recorded before the second starts
        assert refusals.current()["republishing"].operation == "Read"
        allowed.set()
        while refusals.current():
            await asyncio.wait_for(rounds.get(), 5)
    finally:
        await cancel_and_wait(task)
    assert refusals.detail() == ""
