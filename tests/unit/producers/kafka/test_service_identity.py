"""Each installation's groups follow its topic prefix; static membership reaches the consumer."""

from __future__ import annotations

import pytest

from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.producers.kafka import ConsumerSettings, KafkaConnection, ServiceShell
from assetbus.schemas import Topics

DB = "postgresql+asyncpg://u:p@db/assetbus"


def test_group_ids_follow_the_topic_prefix_and_keep_the_historical_ids_for_the_default_one() -> None:
    kafka = KafkaConnection()
    assert PersisterConfig(kafka=kafka, database_url=DB, token_secret="s").group_id == "assetbus-persister"
    assert SchedulerConfig(kafka=kafka, database_url=DB).group_id == "assetbus-scheduler"
    team = Topics(prefix="team-a")
    assert PersisterConfig(kafka=kafka, database_url=DB, token_secret="s", topics=team).group_id == "team-a-persister"
    assert SchedulerConfig(kafka=kafka, database_url=DB, topics={"prefix": "team-b"}).group_id == "team-b-scheduler"


def test_an_explicit_group_id_wins_over_the_derived_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_PERSISTER_GROUP_ID", "assetbus-persister")
    config = PersisterConfig(kafka=KafkaConnection(), database_url=DB, token_secret="s", topics=Topics(prefix="b"))
    assert config.group_id == "assetbus-persister"  # an installation keeping its old group under a new prefix
    assert SchedulerConfig(kafka=KafkaConnection(), database_url=DB, topics=Topics(prefix="b"),
                           group_id="mine").group_id == "mine"


def test_static_membership_and_pass_through_properties_reach_the_consumer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_SCHEDULER_GROUP_INSTANCE_ID", "scheduler-0")
    config = SchedulerConfig(kafka=KafkaConnection(properties={"client.rack": "eu-west-1a"}), database_url=DB)
    shell: ServiceShell[object] = ServiceShell(config.kafka, ConsumerSettings(topics=("t",), group_id=config.group_id,
                                                        group_instance_id=config.group_instance_id),
                         handler=lambda records: None)  # type: ignore[arg-type,return-value]
    kwargs = shell.consumer_kwargs()
    assert (kwargs["group_instance_id"], kwargs["client_rack"]) == ("scheduler-0", "eu-west-1a")
    no_static: ServiceShell[object] = ServiceShell(KafkaConnection(), ConsumerSettings(topics=("t",), group_id="g"),
                             handler=lambda records: None)  # type: ignore[arg-type,return-value]
    assert "group_instance_id" not in no_static.consumer_kwargs()
