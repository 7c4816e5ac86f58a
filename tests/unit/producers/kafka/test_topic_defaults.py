"""Topic defaults: replication factor min(3, brokers), min ISR one less (between 1 and 2)."""

from __future__ import annotations

import pytest

from assetbus.producers.kafka import KafkaConnection, TopicCreator, WeakerTopic, default_replication


@pytest.mark.parametrize(("brokers", "expected"), [(1, (1, 1)), (2, (2, 1)), (3, (3, 2)), (5, (3, 2))])
def test_replication_defaults_follow_the_cluster_size(brokers: int, expected: tuple[int, int]) -> None:
    assert default_replication(brokers) == expected


def test_a_replication_factor_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="replication_factor"):
        TopicCreator(KafkaConnection(), replication_factor=0)


def test_a_weaker_topic_reads_as_a_sentence() -> None:
    assert str(WeakerTopic("p.emissions", "min.insync.replicas", 2, 1)) == \
        "p.emissions: min.insync.replicas is 1, configured 2"
