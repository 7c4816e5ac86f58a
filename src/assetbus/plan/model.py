"""The topics and ACLs of one installation, as a platform team provisions them (`assetbus topics plan`).

Built from the same specs the services create topics from (`core_specs`, the scheduler's readiness
partitions), so a plan and a running installation cannot drift apart. Each principal gets only what its
code does on the wire; docs/production.md ("Topics and ACLs") lists the rules and why each role needs them.
Readiness topics are one per consumer DAG, so their ACLs are PREFIXED on `<prefix>.readiness.`: adding a
DAG adds partitions, never ACLs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from assetbus.consumers.scheduler.config import READINESS_PARTITIONS
from assetbus.producers.kafka.topics import MIN_ISR, core_specs, min_isr_for
from assetbus.schemas import Topics

__all__ = ["PRINCIPALS", "USER_AUTHS", "Acl", "Plan", "PlannedTopic", "UserAuth", "build_plan", "parse_principals"]

Resource = Literal["topic", "group", "cluster"]
Pattern = Literal["literal", "prefixed"]
Operation = Literal["Read", "Write", "Create", "Describe", "DescribeConfigs"]
UserAuth = Literal["scram-sha-512", "tls", "none"]
USER_AUTHS: tuple[UserAuth, ...] = ("scram-sha-512", "tls", "none")
"""How the principals authenticate: SCRAM-SHA-512 users, TLS client certificates (`User:CN=<name>`), or none
that Kafka manages (OAuth: the identity provider names the principal)."""

PRINCIPALS = {
    "sdk": "task code, callbacks and notifiers emitting through the SDK",
    "persister": "assetbus run persister",
    "scheduler": "assetbus run scheduler",
    "bridge": "assetbus run airflow-bridge",
    "forwarder": "assetbus run airflow-forwarder",
    "api": "assetbus run api (HTTP emit gateway, /ui, metrics)",
    "cli": "the operator's assetbus CLI (migrate, dags sync, replay, dlq, events, lag)",
    "triggerer": "Airflow's triggerer (AssetbusReadinessTrigger watchers, AssetbusPartitionSensor)",
    "subscriber": "downstream readiness subscribers (the SDK's ReadinessSubscriber, subscribe_readiness)",
}
"""Who needs ACLs, by role; the Kafka principal is `User:<prefix>-<role>` unless named otherwise."""


def parse_principals(values: Iterable[str]) -> dict[str, str]:
    """`role=Type:name` options (`--principal persister=User:CN=persister,O=acme`) as role → principal; a
    ValueError names what is wrong."""
    principals: dict[str, str] = {}
    for value in values:
        role, sep, principal = value.partition("=")
        role = role.strip()
        if not sep or role not in PRINCIPALS:
            raise ValueError(f"--principal takes ROLE=PRINCIPAL with ROLE one of {', '.join(PRINCIPALS)}, "
                             f"not {value!r}")
        kind, colon, name = principal.partition(":")
        if not colon or not kind or not name:
            raise ValueError(f"--principal {role}=...: a Kafka principal is TYPE:NAME (User:{role}), not "
                             f"{principal!r}")
        principals[role] = principal
    return principals


@dataclass(frozen=True)
class PlannedTopic:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    purpose: str

    @property
    def min_insync_replicas(self) -> int:
        return int(self.configs[MIN_ISR])


@dataclass(frozen=True, order=True)
class Acl:
    """One ALLOW rule: `principal` may `operation` on the resource (any host)."""

    principal: str
    resource_type: Resource
    pattern_type: Pattern
    resource_name: str
    operation: Operation


@dataclass
class Plan:
    prefix: str
    create_topics: bool
    principals: dict[str, str]
    """Role → Kafka principal (`User:...`)."""
    user_auth: UserAuth = "scram-sha-512"
    topics: list[PlannedTopic] = field(default_factory=list)
    acls: list[Acl] = field(default_factory=list)

    def roles_of(self, principal: str) -> list[str]:
        return [role for role, named in self.principals.items() if named == principal]


def build_plan(topics: Topics, dag_ids: Iterable[str] = (), *, replication_factor: int = 3,
               min_insync_replicas: int | None = None, partitions: int | None = None,
               readiness_partitions: int = READINESS_PARTITIONS, create_topics: bool = True,
               subscriber_groups_prefix: str | None = None, principals: dict[str, str] | None = None,
               user_auth: UserAuth = "scram-sha-512") -> Plan:
    """Every topic of the installation (the core ones, and one readiness topic per DAG in `dag_ids`) and every ACL;
    `principals` names some roles' principals otherwise."""
    min_isr = min_insync_replicas or min_isr_for(replication_factor)
    purposes = {topics.emissions: "EmissionCommands, keyed by asset name: emitters -> persister",
                topics.receipts: "Receipts, keyed by producer id: persister -> emitters",
                topics.asset_events: "stored AssetEvents, keyed by asset name: persister -> scheduler",
                topics.emissions_dlq: "unreadable commands with the reason in headers: persister"}
    unknown = set(principals or {}) - set(PRINCIPALS)
    if unknown:
        raise ValueError(f"no role {', '.join(sorted(unknown))}: the roles are {', '.join(PRINCIPALS)}")
    # with TLS client certificates the principal is the certificate's subject
    user = "User:CN=" if user_auth == "tls" else "User:"
    who = {role: f"{user}{topics.prefix}-{role}" for role in PRINCIPALS} | (principals or {})
    plan = Plan(topics.prefix, create_topics, who, user_auth)
    for spec in core_specs(topics, partitions=partitions):
        plan.topics.append(PlannedTopic(spec.name, spec.partitions, replication_factor,
                                        {MIN_ISR: str(min_isr), **spec.configs}, purposes[spec.name]))
    for dag_id in sorted(set(dag_ids)):
        plan.topics.append(PlannedTopic(topics.readiness(dag_id), readiness_partitions, replication_factor,
                                        {MIN_ISR: str(min_isr)}, f"ReadinessSignals of consumer DAG {dag_id}"))
    subscribers = subscriber_groups_prefix or f"{topics.prefix}-subscriber."
    plan.acls = sorted(set(_acls(topics, who, create_topics, subscribers)))  # roles may share a principal
    return plan


def _acls(topics: Topics, who: dict[str, str], create: bool, subscriber_groups: str) -> list[Acl]:
    readiness = topics.prefix + ".readiness."
    everything = topics.prefix + "."

    def topic(role: str, name: str, *operations: Operation, pattern: Pattern = "literal") -> list[Acl]:
        return [Acl(who[role], "topic", pattern, name, op) for op in operations]

    def group(role: str, name: str, operation: Operation, pattern: Pattern = "literal") -> Acl:
        return Acl(who[role], "group", pattern, name, operation)

    creates: tuple[Operation, ...] = ("Create",) if create else ()
    return [
        *topic("sdk", topics.emissions, "Write"),
        *topic("sdk", topics.receipts, "Read"),
        *topic("persister", topics.emissions, "Read"),
        group("persister", f"{topics.prefix}-persister", "Read"),
        *topic("persister", topics.receipts, "Write"),
        *topic("persister", topics.asset_events, "Write"),
        *topic("persister", topics.emissions_dlq, "Write"),
        *topic("scheduler", topics.asset_events, "Read"),
        group("scheduler", f"{topics.prefix}-scheduler", "Read"),
        *topic("scheduler", readiness, "Read", "Write", *creates, pattern="prefixed"),
        *topic("bridge", topics.asset_events, "Describe"),
        *topic("bridge", readiness, "Read", *creates, pattern="prefixed"),
        group("bridge", f"{topics.prefix}-airflow-bridge", "Read"),
        *topic("forwarder", topics.asset_events, "Read"),
        group("forwarder", f"{topics.prefix}-airflow-forwarder", "Read"),
        *topic("api", topics.emissions, "Write"),
        *topic("api", topics.receipts, "Read"),
        *topic("api", everything, "Describe", pattern="prefixed"),
        group("api", f"{topics.prefix}-", "Describe", pattern="prefixed"),
        *topic("cli", everything, "Read", "Write", "DescribeConfigs", *creates, pattern="prefixed"),
        group("cli", f"{topics.prefix}-", "Describe", pattern="prefixed"),
        *topic("triggerer", readiness, "Read", pattern="prefixed"),
        group("triggerer", f"{topics.prefix}-watcher.", "Read", pattern="prefixed"),  # <prefix>-watcher.<dag_id>
        *topic("triggerer", topics.asset_events, "Read"),
        *topic("subscriber", readiness, "Read", pattern="prefixed"),
        group("subscriber", subscriber_groups, "Read", pattern="prefixed"),
    ]

