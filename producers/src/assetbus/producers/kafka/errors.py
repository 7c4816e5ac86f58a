"""The Kafka toolkit's exceptions: one root, a `retriable` flag, the connection described (never a secret)."""

from __future__ import annotations

__all__ = ["KafkaToolkitError", "TopicMissing"]


class KafkaToolkitError(Exception):
    """Root of every error the Kafka toolkit raises."""

    retriable: bool = False


class TopicMissing(KafkaToolkitError):
    """A topic the client needs does not exist (topics are created by `assetbus migrate`, never by the broker)."""

    def __init__(self, topic: str, role: str) -> None:
        super().__init__(f"{role} {topic!r} does not exist; run `assetbus migrate` first")
        self.topic = topic
        self.role = role
