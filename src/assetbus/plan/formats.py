"""A plan written for the tool that provisions it: JSON or YAML (the plan itself), Strimzi custom resources
(`KafkaTopic` and `KafkaUser` of `kafka.strimzi.io/v1`), or Terraform's JSON syntax (`*.tf.json`) for the
Mongey/kafka provider (`kafka_topic`, `kafka_acl`).

Every output is built as data and serialised (`yaml.safe_dump`, `json.dumps`), never pasted together from text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any, Literal

import yaml

from assetbus.plan.model import PRINCIPALS, Acl, Plan

__all__ = ["FORMATS", "MONGEY_KAFKA_VERSION", "STRIMZI_API_VERSION", "PlanFormat", "as_document", "k8s_name",
           "render", "strimzi_resources", "terraform_document", "tf_label"]

PlanFormat = Literal["json", "yaml", "strimzi", "terraform"]
FORMATS: tuple[PlanFormat, ...] = ("json", "yaml", "strimzi", "terraform")
STRIMZI_API_VERSION = "kafka.strimzi.io/v1"
"""Strimzi 1.0 serves only `v1` of its custom resources."""
MONGEY_KAFKA_VERSION = "~> 0.12"
"""The Mongey/kafka provider versions the Terraform output is written for (`kafka_topic`, `kafka_acl`)."""


def as_document(plan: Plan) -> dict[str, Any]:
    """The plan as plain data (what `--format json` and `--format yaml` print)."""
    return {
        "prefix": plan.prefix,
        "create_topics": plan.create_topics,
        "user_auth": plan.user_auth,
        "topics": [{"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                    "min_insync_replicas": t.min_insync_replicas,
                    "retention_ms": int(t.configs["retention.ms"]) if "retention.ms" in t.configs else None,
                    "configs": dict(sorted(t.configs.items())), "purpose": t.purpose} for t in plan.topics],
        "principals": {role: {"principal": principal, "runs": PRINCIPALS.get(role, role),
                              "acls": [_acl(acl) for acl in plan.acls if acl.principal == principal]}
                       for role, principal in plan.principals.items()},
    }


def _acl(acl: Acl) -> dict[str, str]:
    return {"resource_type": acl.resource_type, "pattern_type": acl.pattern_type,
            "resource_name": acl.resource_name, "operation": acl.operation, "permission": "Allow", "host": "*"}


def render(plan: Plan, fmt: PlanFormat, *, strimzi_cluster: str = "my-cluster") -> str:
    """The plan in `fmt`; a ValueError says why it cannot be written so (a principal Strimzi cannot manage)."""
    if fmt == "json":
        return json.dumps(as_document(plan), indent=2) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(as_document(plan), sort_keys=False))
    if fmt == "strimzi":
        return str(yaml.safe_dump_all(strimzi_resources(plan, strimzi_cluster), sort_keys=False))
    return json.dumps(terraform_document(plan), indent=2) + "\n"


def _hashed(original: str, changed: str, sep: str, limit: int) -> str:
    """`changed` as it is if it is `original`; else with a short hash of `original` (within `limit` characters)."""
    if changed == original and len(changed) <= limit:
        return changed
    digest = hashlib.sha256(original.encode()).hexdigest()[:8]
    return f"{changed[:limit - len(digest) - len(sep)].rstrip('-._')}{sep}{digest}"


def k8s_name(name: str) -> str:
    """A Kubernetes resource name for `name`: itself if it is one, else its lower-cased, RFC 1123 form with a
    hash of `name` (`assetbus.readiness.orders_daily` → `assetbus.readiness.orders-daily-1a2b3c4d`)."""
    labels = [re.sub(r"[^a-z0-9-]", "-", label).strip("-") for label in name.lower().split(".")]
    changed = ".".join(label for label in labels if label) or "x"
    return _hashed(name, changed, "-", 253)


def tf_label(name: str) -> str:
    """A Terraform resource label for `name`: itself if it is one, else with every other character as `_` and a
    hash of `name` (`assetbus.emissions` → `assetbus_emissions_1a2b3c4d`)."""
    changed = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if not re.match(r"[A-Za-z_]", changed):
        changed = "_" + changed
    return _hashed(name, changed, "_", 200)


def _unique(names: list[str], what: str) -> list[str]:
    for name, count in Counter(names).items():
        if count > 1:
            raise ValueError(f"two {what} would both be named {name!r}")
    return names


def strimzi_resources(plan: Plan, cluster: str) -> list[dict[str, Any]]:
    """A `KafkaTopic` per topic and a `KafkaUser` per principal, `kafka.strimzi.io/v1` (docs/production.md). A
    topic or user whose name is not a Kubernetes name keeps it in `topicName` / `userName`."""
    labels = {"strimzi.io/cluster": cluster}
    documents: list[dict[str, Any]] = []
    for topic in plan.topics:
        name = k8s_name(topic.name)
        spec: dict[str, Any] = {"topicName": topic.name} if name != topic.name else {}
        spec |= {"partitions": topic.partitions, "replicas": topic.replication_factor,
                 "config": dict(sorted(topic.configs.items()))}
        documents.append({"apiVersion": STRIMZI_API_VERSION, "kind": "KafkaTopic",
                          "metadata": {"name": name, "labels": labels}, "spec": spec})
    for principal in dict.fromkeys(plan.principals.values()):
        user = _strimzi_user(principal, plan)
        name = k8s_name(user)
        spec = {"userName": user} if name != user else {}
        if plan.user_auth != "none":
            spec["authentication"] = {"type": plan.user_auth}
        spec["authorization"] = {"type": "simple", "acls": _strimzi_acls(plan, principal)}
        documents.append({"apiVersion": STRIMZI_API_VERSION, "kind": "KafkaUser",
                          "metadata": {"name": name, "labels": labels,
                                       "annotations": {"assetbus.io/roles": ",".join(plan.roles_of(principal))}},
                          "spec": spec})
    _unique([f"{d['kind']}/{d['metadata']['name']}" for d in documents], "Strimzi resources")
    return documents


def _strimzi_user(principal: str, plan: Plan) -> str:
    """The KafkaUser user name whose ACLs the User Operator writes for `principal`: `User:<name>` (SCRAM, OAuth),
    `User:CN=<name>` (TLS)."""
    roles = ", ".join(plan.roles_of(principal))
    if plan.user_auth == "tls":
        name = principal.removeprefix("User:CN=")
        if name == principal or not name or any(c in name for c in ",+=\\"):
            raise ValueError(f"{roles}: Strimzi's TLS users are the principal User:CN=<name> (the User Operator "
                             f"issues a certificate whose subject is CN=<name>), not {principal}")
        if len(name) > 64:
            raise ValueError(f"{roles}: {name!r} is longer than a certificate's CN may be (64 characters)")
        return name
    name = principal.removeprefix("User:")
    if name == principal or not name:
        raise ValueError(f"{roles}: a Strimzi KafkaUser is the principal User:<name>, not {principal}")
    return name


def _strimzi_acls(plan: Plan, principal: str) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for acl in plan.acls:
        if acl.principal == principal:
            grouped.setdefault((acl.resource_type, acl.pattern_type, acl.resource_name), []).append(acl.operation)
    return [{"type": "allow",
             "resource": {"type": kind, "name": name, "patternType": "prefix" if pattern == "prefixed" else pattern},
             "operations": operations, "host": "*"} for (kind, pattern, name), operations in grouped.items()]


def terraform_document(plan: Plan) -> dict[str, Any]:
    """Terraform's JSON configuration syntax (save it as `*.tf.json`): the Mongey/kafka provider, a `kafka_topic`
    per topic and a `kafka_acl` per ACL. The provider's connection (`provider "kafka"`) is the platform's."""
    topics = {tf_label(topic.name): {"name": topic.name, "partitions": topic.partitions,
                                     "replication_factor": topic.replication_factor,
                                     "config": dict(sorted(topic.configs.items()))} for topic in plan.topics}
    acls = {}
    for acl in plan.acls:
        label = tf_label(f"{acl.principal}_{acl.operation}_{acl.resource_type}_{acl.pattern_type}_"
                         f"{acl.resource_name}")
        acls[label] = {"acl_principal": acl.principal, "acl_host": "*", "acl_operation": acl.operation,
                       "acl_permission_type": "Allow", "resource_type": acl.resource_type.capitalize(),
                       "resource_name": acl.resource_name,
                       "resource_pattern_type_filter": acl.pattern_type.capitalize()}
    _unique([tf_label(t.name) for t in plan.topics], "kafka_topic resources")
    if len(acls) != len(plan.acls):
        raise ValueError("two kafka_acl resources would have the same label")
    return {"//": f"assetbus topics plan, topic prefix {plan.prefix!r}: the topics and ACLs of this installation",
            "terraform": {"required_providers": {"kafka": {"source": "Mongey/kafka",
                                                           "version": MONGEY_KAFKA_VERSION}}},
            "resource": {"kafka_topic": topics, "kafka_acl": acls}}
