"""The assetbus queue URI of `MessageQueueTrigger` (assetbus://readiness/<dag_id>?conn_id=..&group_id=..):
what it names, the clear error for one that names nothing, and the provider info that registers the queue.
(That Airflow finds the provider and runs a watcher through it: tests/integration/airflow/test_queue_trigger.py.)"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assetbus.producers.airflow.provider import get_provider_info
from assetbus.producers.airflow.queue_uri import InvalidQueue, ReadinessQueue, is_assetbus_queue
from assetbus.producers.errors import EmitterError


def test_the_uri_names_a_consumer_dag_and_the_trigger_options() -> None:
    queue = ReadinessQueue.parse("assetbus://readiness/orders_by_partition?conn_id=assetbus_triggerer&group_id=g.1")
    assert queue == ReadinessQueue("orders_by_partition", conn_id="assetbus_triggerer", group_id="g.1")
    assert queue.trigger_kwargs() == {"dag_id": "orders_by_partition", "conn_id": "assetbus_triggerer",
                                      "group_id": "g.1"}
    assert ReadinessQueue.parse("assetbus://readiness/orders").trigger_kwargs() == {"dag_id": "orders"}


@given(dag_id=st.from_regex(r"[A-Za-z0-9._-]{1,200}", fullmatch=True),
       conn_id=st.none() | st.text(min_size=1, max_size=20),
       group_id=st.none() | st.text(min_size=1, max_size=20))
def test_a_queue_reads_back_from_its_uri(dag_id: str, conn_id: str | None, group_id: str | None) -> None:
    queue = ReadinessQueue(dag_id, conn_id=conn_id, group_id=group_id)
    assert ReadinessQueue.parse(queue.uri) == queue
    assert is_assetbus_queue(queue.uri)


@pytest.mark.parametrize(("queue", "reason"), [
    ("kafka://localhost:9092/orders", "not an assetbus:// URI"),
    ("assetbus:readiness/orders", "not an assetbus:// URI"),
    ("assetbus://orders_by_partition", "'orders_by_partition' is not a kind of assetbus queue"),
    ("assetbus://readiness", "the path must be one consumer DAG id"),
    ("assetbus://readiness/", "the path must be one consumer DAG id"),
    ("assetbus://readiness/a/b", "the path must be one consumer DAG id"),
    ("assetbus://readiness/orders/", "the path must be one consumer DAG id"),
    ("assetbus://readiness/orders%20daily", "dag_id 'orders%20daily' cannot name a readiness topic"),
    ("assetbus://readiness/orders?group=g", "unknown option 'group' (the options are conn_id, group_id)"),
    ("assetbus://readiness/orders?conn_id=a&conn_id=b", "conn_id is given twice"),
    ("assetbus://readiness/orders?conn_id=", "conn_id is empty"),
    ("assetbus://readiness/orders?conn_id", "is not name=value pairs"),
    ("assetbus://readiness/orders#latest", "a fragment (#latest) means nothing here"),
])
def test_a_uri_that_names_no_readiness_topic_says_what_is_wrong_and_what_it_should_be(queue: str,
                                                                                       reason: str) -> None:
    with pytest.raises(InvalidQueue) as raised:
        ReadinessQueue.parse(queue)
    assert reason in raised.value.reason
    assert str(raised.value).startswith(f"assetbus queue {queue!r}: ")
    assert str(raised.value).endswith("; expected assetbus://readiness/<dag_id>[?conn_id=<connection>"
                                      "&group_id=<consumer group>]")
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, EmitterError)


def test_any_assetbus_uri_is_the_assetbus_providers_so_a_wrong_one_fails_with_its_error() -> None:
    assert is_assetbus_queue("assetbus://nonsense")
    assert is_assetbus_queue("ASSETBUS://readiness/orders")
    assert not is_assetbus_queue("kafka://broker/assetbus")
    assert not is_assetbus_queue("assetbus")


def test_an_option_in_both_the_uri_and_the_keyword_arguments_is_refused() -> None:
    queue = ReadinessQueue.parse("assetbus://readiness/orders?conn_id=a")
    assert queue.trigger_kwargs(group_id="g") == {"dag_id": "orders", "conn_id": "a"}
    with pytest.raises(InvalidQueue, match="conn_id, dag_id given both in the URI and as keyword arguments"):
        queue.trigger_kwargs(conn_id="b", dag_id="other")


def test_a_queue_built_in_code_is_checked_too() -> None:
    with pytest.raises(InvalidQueue, match="dag_id 'no spaces' cannot name a readiness topic"):
        ReadinessQueue("no spaces")
    with pytest.raises(InvalidQueue, match="group_id is empty"):
        ReadinessQueue("orders", group_id="")


def test_the_provider_info_registers_the_assetbus_message_queue() -> None:
    assert get_provider_info()["queues"] == ["assetbus.producers.airflow.queues.AssetbusMessageQueueProvider"]
