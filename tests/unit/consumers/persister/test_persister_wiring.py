"""The FastStream wiring: manual acknowledgement, no auto-commit, our rebalance listener and parser."""

from __future__ import annotations

from faststream import AckPolicy

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.schemas import Topics


def test_the_subscriber_never_commits_on_its_own() -> None:
    persister = Persister(PersisterConfig(bootstrap_servers="127.0.0.1:1", database_url="postgresql+asyncpg://x@y/z",
                                          token_secret="s", topics=Topics(prefix="wiring")))
    subscriber = persister.subscriber
    assert subscriber.ack_policy is AckPolicy.MANUAL
    assert subscriber._connection_args["enable_auto_commit"] is False
    assert subscriber._listener is persister.offsets
    assert subscriber.topic_names == ["wiring.emissions"]
