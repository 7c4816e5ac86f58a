"""The one topic creator: partitions, replication factor and `min.insync.replicas` as arguments; existing topics
are checked, not changed (docs/production.md, "Replication and min ISR" and "Never creating topics").

`ensure` returns only once the cluster's metadata lists every topic it created with leaders (`wait_listed`), so
that a command run right after (a `list_topics`, a first produce) does not find them missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import KafkaToolkitError
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.schemas import Topics

__all__ = ["EXIT_NOT_MIGRATED", "EXIT_TOPICS_NOT_CREATED", "TopicCreationFailed", "TopicCreator", "TopicReport",
           "TopicSpec", "TopicsNotCreated", "TopicsNotListed", "WeakerTopic", "admin_client", "core_specs",
           "default_replication", "delete_topics", "min_isr_for", "require_topics", "unlisted", "wait_listed"]

log = logging.getLogger("assetbus.topics")

MIN_ISR = "min.insync.replicas"
RETENTION_MS = {"receipts": 24 * 3600 * 1000}
"""Receipts are only useful while an emitter waits; everything else keeps the broker default."""
EXIT_TOPICS_NOT_CREATED = 78
"""Exit code of a service whose topics are missing while it may not create them (sysexits EX_CONFIG)."""
EXIT_NOT_MIGRATED = 6
"""Exit code of a service whose topics are missing where assetbus creates them: `assetbus migrate` was not run
(the CLI's `ExitCode.NOT_MIGRATED`)."""


class TopicCreationFailed(KafkaToolkitError):
    """The cluster refused to create a topic (for example a replication factor above its broker count)."""


class TopicsNotListed(KafkaToolkitError):
    """Topics the cluster's metadata did not list with a leader for every partition within the wait."""

    def __init__(self, missing: list[str], waited_s: float) -> None:
        super().__init__(f"{', '.join(missing)} not listed by the broker for {waited_s:.0f}s")
        self.missing = missing
        self.waited_s = waited_s


class TopicsNotCreated(KafkaToolkitError):
    """Topics a process needs are missing. `str()` is one line naming them, and what creates them: with
    `ASSETBUS_CREATE_TOPICS=false` (`migrate_creates=False`) the platform's command for the first one (exit
    code 78), otherwise `assetbus migrate` (exit code 6)."""

    exit_code = EXIT_TOPICS_NOT_CREATED

    def __init__(self, missing: list[TopicSpec], replication_factor: int, min_insync_replicas: int,
                 where: str, *, migrate_creates: bool = False) -> None:
        self.missing = [spec.name for spec in missing]
        if migrate_creates:
            self.exit_code = EXIT_NOT_MIGRATED
            super().__init__(f"missing topic(s) on {where}: {', '.join(self.missing)}; run `assetbus migrate`, or "
                             "check ASSETBUS_TOPIC_PREFIX (a mistyped prefix names topics nobody created)")
            return
        first = missing[0]
        configs = {MIN_ISR: str(min_insync_replicas), **first.configs}
        command = (f"kafka-topics.sh --bootstrap-server ... --create --topic {first.name} --partitions "
                   f"{first.partitions} --replication-factor {replication_factor} "
                   + " ".join(f"--config {key}={value}" for key, value in configs.items()))
        super().__init__(f"missing topic(s) on {where}: {', '.join(self.missing)}; ASSETBUS_CREATE_TOPICS=false, so "
                         f"assetbus creates none: create them as `assetbus topics plan` lists (e.g. `{command}`)")


@dataclass(frozen=True)
class TopicSpec:
    """A topic as wanted: its name, partitions and extra topic configs (retention, ...)."""

    name: str
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WeakerTopic:
    """An existing topic whose `setting` is below what was asked."""

    name: str
    setting: str
    wanted: int
    actual: int

    def __str__(self) -> str:
        return f"{self.name}: {self.setting} is {self.actual}, configured {self.wanted}"


@dataclass
class TopicReport:
    """What `ensure` did and found."""

    replication_factor: int
    min_insync_replicas: int
    created: list[str] = field(default_factory=list)
    weaker: list[WeakerTopic] = field(default_factory=list)


def core_specs(topics: Topics, extra: dict[str, int] | None = None, *,
               partitions: int | None = None, only: Iterable[str] | None = None) -> list[TopicSpec]:
    """The core topics (and `extra` ones) with their partitions; `partitions` overrides every default but the DLQ's.
    `only`: just those of these names (what one service needs)."""
    wanted = {**topics.core(), **(extra or {})}
    if only is not None:
        names = set(only)
        wanted = {name: count for name, count in wanted.items() if name in names}
    specs = []
    for name, count in wanted.items():
        if partitions is not None and name != topics.emissions_dlq:
            count = partitions
        configs = {"retention.ms": str(RETENTION_MS["receipts"])} if name == topics.receipts else {}
        specs.append(TopicSpec(name, count, configs))
    return specs


def min_isr_for(replication: int) -> int:
    """The default `min.insync.replicas` of a replication factor: one less, between 1 and 2."""
    return max(1, min(2, replication - 1))


def default_replication(brokers: int) -> tuple[int, int]:
    """(replication factor, min ISR) for a cluster of `brokers` when nothing is configured: 3 / 2 from three
    brokers on, 1 / 1 for the local single broker."""
    replication = max(1, min(3, brokers))
    return replication, min_isr_for(replication)


@contextlib.asynccontextmanager
async def admin_client(connection: KafkaConnection, **options: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of `connection` (`options`: more aiokafka arguments), closed when the block exits."""
    admin = AIOKafkaAdminClient(**connection.client_kwargs(), **options)
    try:
        await admin.start()
        yield admin
    finally:
        await admin.close()


class TopicCreator:
    """Creates missing topics with one replication policy (with `create=False`, a missing one raises
    `TopicsNotCreated`). Opens an admin client per call."""

    def __init__(self, connection: KafkaConnection, *, replication_factor: int | None = None,
                 min_insync_replicas: int | None = None, create: bool = True) -> None:
        if replication_factor is not None and replication_factor < 1:
            raise ValueError("replication_factor must be at least 1")
        if min_insync_replicas is not None and min_insync_replicas < 1:
            raise ValueError("min_insync_replicas must be at least 1")
        self.connection = connection
        self.replication_factor = replication_factor
        self.min_insync_replicas = min_insync_replicas
        self.create = create
        self._visible = RetryPolicy(initial_s=0.02, max_s=0.5, timeout_s=30.0)

    async def ensure(self, specs: Iterable[TopicSpec], *, check_existing: bool = True) -> TopicReport:
        """Create the topics among `specs` that are missing; report existing ones weaker than asked."""
        wanted = {spec.name: spec for spec in specs}
        async with admin_client(self.connection, request_timeout_ms=15_000) as admin:
            brokers = len((await admin.describe_cluster())["brokers"])
            default_rf, _ = default_replication(brokers)
            replication = self.replication_factor or default_rf
            min_isr = self.min_insync_replicas or min_isr_for(replication)
            report = TopicReport(replication, min_isr)
            if not wanted:
                return report
            existing = set(await admin.list_topics())
            missing = [spec for name, spec in wanted.items() if name not in existing]
            if missing and not self.create:
                raise TopicsNotCreated(missing, replication, min_isr, self.connection.describe())
            if missing:
                report.created = await self._create(admin, missing, replication, min_isr)
                existing |= {spec.name for spec in missing} - set(report.created)  # created meanwhile by another
                if report.created:
                    await self._until_visible(admin, report.created)
                    log.info("created topics", extra={"topics": report.created, "replication_factor": replication,
                                                       MIN_ISR: min_isr})
            present = [spec for name, spec in wanted.items() if name in existing]
            if check_existing and present:
                report.weaker = await self._weaker(admin, present, replication, min_isr)
            return report

    async def _create(self, admin: AIOKafkaAdminClient, specs: list[TopicSpec], replication: int,
                      min_isr: int) -> list[str]:
        """Create the topics; returns the names this call created (not those another client created first)."""
        new = [NewTopic(spec.name, spec.partitions, replication, topic_configs={MIN_ISR: str(min_isr), **spec.configs})
               for spec in specs]
        try:
            response = await admin.create_topics(new)
        except TopicAlreadyExistsError:
            return []
        created = []
        for topic, code, *rest in response.topic_errors:
            if not code:
                created.append(topic)
            elif for_code(code) is not TopicAlreadyExistsError:
                detail = rest[0] if rest and rest[0] else for_code(code).__name__
                raise TopicCreationFailed(f"cannot create topic {topic!r} with {replication} replica(s) and "
                                          f"{MIN_ISR}={min_isr} on {self.connection.describe()}: {detail}")
        return [spec.name for spec in specs if spec.name in created]

    async def _until_visible(self, admin: AIOKafkaAdminClient, names: list[str]) -> None:
        try:
            await wait_listed(admin, names, self._visible)
        except TopicsNotListed as error:
            raise TopicCreationFailed(f"created {', '.join(names)} on {self.connection.describe()}, but the "
                                      f"cluster's metadata did not list them within {error.waited_s:.0f}s") from error

    async def _weaker(self, admin: AIOKafkaAdminClient, specs: list[TopicSpec], replication: int,
                      min_isr: int) -> list[WeakerTopic]:
        weaker: list[WeakerTopic] = []
        described: list[dict[str, Any]] = await admin.describe_topics([spec.name for spec in specs])
        layout = {topic["topic"]: topic["partitions"] for topic in described}
        for spec in specs:
            partitions = layout.get(spec.name, [])
            if len(partitions) < spec.partitions:
                weaker.append(WeakerTopic(spec.name, "partitions", spec.partitions, len(partitions)))
            replicas = min((len(p["replicas"]) for p in partitions), default=0)
            if replicas < replication:
                weaker.append(WeakerTopic(spec.name, "replication factor", replication, replicas))
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, spec.name, {MIN_ISR: None}) for spec in specs])
        for response in responses:
            for resource in response.to_object()["resources"]:
                for entry in resource["config_entries"]:
                    if entry["config_names"] == MIN_ISR and int(entry["config_value"]) < min_isr:
                        weaker.append(WeakerTopic(resource["resource_name"], MIN_ISR, min_isr,
                                                  int(entry["config_value"])))
        return sorted(weaker, key=lambda w: (w.name, w.setting))


async def wait_listed(admin: AIOKafkaAdminClient, names: Sequence[str], policy: RetryPolicy) -> None:
    """The one "is it there yet" check: return once the cluster's metadata lists each of `names` with a leader
    for every partition, or raise `TopicsNotListed` (naming those still missing) when `policy` times out.

    A topic created a moment ago reaches the brokers of a cluster one after the other, and a KRaft controller
    answers CreateTopics before the brokers have applied it. The names are looked up in the full topic list
    first and only listed ones are described: a metadata request naming a missing topic would have a broker
    with `auto.create.topics.enable` create it."""
    missing = list(names)
    started = time.monotonic()

    async def listed() -> None:
        present = set(await admin.list_topics())
        described = {t["topic"]: t for t in await admin.describe_topics([n for n in names if n in present])} \
            if present.intersection(names) else {}
        missing[:] = [name for name in names if not _has_leaders(described.get(name))]
        if missing:
            raise TopicsNotListed(list(missing), time.monotonic() - started)

    def not_yet(error: BaseException) -> bool:
        return isinstance(error, TopicsNotListed) or (isinstance(error, KafkaError) and error.retriable)

    try:
        await retry_until(listed, policy, what="the topics in the cluster's metadata", retriable=not_yet)
    except (RetryTimeout, asyncio.TimeoutError) as error:  # the last attempt may be cut short by the deadline
        raise TopicsNotListed(missing, time.monotonic() - started) from error


async def unlisted(connection: KafkaConnection, names: Sequence[str], wait_s: float) -> list[str]:
    """Those of `names` that the cluster's metadata has not listed with leaders within `wait_s` (`wait_listed`)."""
    async with admin_client(connection, request_timeout_ms=10_000) as admin:
        try:
            await wait_listed(admin, names, RetryPolicy(initial_s=0.1, max_s=1.0, timeout_s=wait_s))
        except TopicsNotListed as error:
            return error.missing
    return []


async def require_topics(connection: KafkaConnection, specs: Iterable[TopicSpec], *, migrate_creates: bool,
                         wait_s: float = 10.0) -> None:
    """Return once the cluster lists every topic of `specs` with leaders; otherwise `TopicsNotCreated` names
    the missing ones after `wait_s`. `migrate_creates`: this installation creates its topics (`assetbus
    migrate`), so the fix to name is that command; otherwise the platform creates them."""
    wanted = list(specs)
    if not wanted or not (missing := await unlisted(connection, [spec.name for spec in wanted], wait_s)):
        return
    async with admin_client(connection, request_timeout_ms=10_000) as admin:
        brokers = len((await admin.describe_cluster())["brokers"])
    replication, min_isr = default_replication(brokers)
    raise TopicsNotCreated([spec for spec in wanted if spec.name in missing], replication, min_isr,
                           connection.describe(), migrate_creates=migrate_creates)


def _has_leaders(topic: Mapping[str, Any] | None) -> bool:
    return topic is not None and not topic["error_code"] and bool(topic["partitions"]) and all(
        p["leader"] >= 0 for p in topic["partitions"])


async def delete_topics(connection: KafkaConnection, names: Iterable[str]) -> None:
    """Delete those of `names` that exist (tests and benchmarks clean up with it)."""
    async with admin_client(connection) as admin:
        existing = set(await admin.list_topics())
        doomed = [name for name in names if name in existing]
        if doomed:
            await admin.delete_topics(doomed)
