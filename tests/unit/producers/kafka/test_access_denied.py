"""An authorization refusal becomes one line naming the principal, the operation and the resource."""

from __future__ import annotations

from aiokafka.errors import GroupAuthorizationFailedError, NodeNotReadyError, TopicAuthorizationFailedError

from assetbus.producers.kafka import KafkaConnection, SecurityProtocol
from assetbus.producers.kafka.access import access_denied

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
