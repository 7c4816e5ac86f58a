"""Read-side views of the pipeline's Kafka topics for operators: consumer-group lag, dead letters, topic settings."""

from assetbus.consumers.observe.deadletters import DeadLetter, read_dead_letter, read_dead_letters
from assetbus.consumers.observe.lag import PartitionLag, consumer_lag
from assetbus.consumers.observe.topics import ClusterInfo, TopicInfo, describe_cluster

__all__ = [
    "ClusterInfo",
    "DeadLetter",
    "PartitionLag",
    "TopicInfo",
    "consumer_lag",
    "describe_cluster",
    "read_dead_letter",
    "read_dead_letters",
]
