"""What operators look at: consumer-group lag, dead letters, topic settings (the CLI; the `/ui` page
and the services' probes add their own modules here)."""

from assetbus.consumers.observe.deadletters import DeadLetterRecord, read_dead_letter, read_dead_letters
from assetbus.consumers.observe.lag import GroupLag, PartitionLag, consumer_group_lag, end_offsets, partitions_of
from assetbus.consumers.observe.topics import ClusterInfo, TopicInfo, describe_cluster

__all__ = [
    "ClusterInfo",
    "DeadLetterRecord",
    "GroupLag",
    "PartitionLag",
    "TopicInfo",
    "consumer_group_lag",
    "describe_cluster",
    "end_offsets",
    "partitions_of",
    "read_dead_letter",
    "read_dead_letters",
]
