"""The persister's consumer wiring: no auto-commit, our rebalance listener, the emissions topic, its group."""

from __future__ import annotations

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import Topics


def test_the_subscriber_never_commits_on_its_own() -> None:
    kafka = KafkaConnection(bootstrap_servers=("127.0.0.1:1", "localhost:2"))
    persister = Persister(PersisterConfig(kafka=kafka, database_url="postgresql+asyncpg://x@y/z",
                                          token_secret="s", topics=Topics(prefix="wiring"), group_id="g"))
    shell = persister.shell
    kwargs = shell.consumer_kwargs()
    assert kwargs["enable_auto_commit"] is False
    assert kwargs["group_id"] == "g"
    assert kwargs["bootstrap_servers"] == ["127.0.0.1:1", "localhost:2"]  # the list, never one joined string
    assert shell.offsets is persister.offsets
    assert shell.settings.topics == ("wiring.emissions",)
