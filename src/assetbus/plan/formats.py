"""A plan written for the tool that provisions it: JSON or YAML (the plan itself), Strimzi custom resources
(`KafkaTopic` and `KafkaUser`), or Terraform for the Mongey/kafka provider (`kafka_topic`, `kafka_acl`)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any, Literal

import yaml

from assetbus.plan.model import PRINCIPALS, Acl, Plan

__all__ = ["FORMATS", "PlanFormat", "as_document", "render"]

PlanFormat = Literal["json", "yaml", "strimzi", "terraform"]
FORMATS: tuple[PlanFormat, ...] = ("json", "yaml", "strimzi", "terraform")

def as_document(plan: Plan) -> dict[str, Any]:
    """The plan as plain data (what `--format json` and `--format yaml` print)."""
    return {
        "prefix": plan.prefix,
        "create_topics": plan.create_topics,
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
    if fmt == "json":
        return json.dumps(as_document(plan), indent=2) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(as_document(plan), sort_keys=False))
    if fmt == "strimzi":
        return _strimzi(plan, strimzi_cluster)
    return _terraform(plan)

def _strimzi(plan: Plan, cluster: str) -> str:
    labels = {"strimzi.io/cluster": cluster}
    documents: list[dict[str, Any]] = []
    for topic in plan.topics:
        documents.append({"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaTopic",
                          "metadata": {"name": _k8s_name(topic.name), "labels": labels},
                          "spec": {"topicName": topic.name, "partitions": topic.partitions,
                                   "replicas": topic.replication_factor,
                                   "config": dict(sorted(topic.configs.items()))}})
    for principal in plan.principals.values():
        grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for acl in plan.acls:
            if acl.principal == principal:
                grouped[(acl.resource_type, acl.pattern_type, acl.resource_name)].append(acl.operation)
        acls = [{"resource": {"type": kind, "name": name,
                              "patternType": "prefix" if pattern == "prefixed" else pattern},
                 "operations": operations, "host": "*"} for (kind, pattern, name), operations in grouped.items()]
        documents.append({"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaUser",
                          "metadata": {"name": _k8s_name(principal.removeprefix("User:")), "labels": labels},
                          "spec": {"authentication": {"type": "scram-sha-512"},
                                   "authorization": {"type": "simple", "acls": acls}}})
    return str(yaml.safe_dump_all(documents, sort_keys=False))

def _k8s_name(name: str) -> str:
    return re.sub(r"[^a-z0-9.-]", "-", name.lower()).strip("-.")

def _terraform(plan: Plan) -> str:
    blocks = []
    for topic in plan.topics:
        configs = "\n".join(f'    "{key}" = "{value}"' for key, value in sorted(topic.configs.items()))
        blocks.append(f'resource "kafka_topic" "{_tf_name(topic.name)}" {{\n'
                      f'  name               = "{topic.name}"\n'
                      f"  partitions         = {topic.partitions}\n"
                      f"  replication_factor = {topic.replication_factor}\n"
                      f"  config = {{\n{configs}\n  }}\n}}\n")
    for acl in plan.acls:
        label = _tf_name(f"{acl.principal.removeprefix('User:')}_{acl.operation}_{acl.resource_type}_"
                         f"{acl.resource_name}")
        blocks.append(f'resource "kafka_acl" "{label}" {{\n'
                      f'  acl_principal                = "{acl.principal}"\n'
                      f'  acl_host                     = "*"\n'
                      f'  acl_operation                = "{acl.operation}"\n'
                      f'  acl_permission_type          = "Allow"\n'
                      f'  resource_type                = "{acl.resource_type.capitalize()}"\n'
                      f'  resource_name                = "{acl.resource_name}"\n'
                      f'  resource_pattern_type_filter = "{acl.pattern_type.capitalize()}"\n}}\n')
    return "\n".join(blocks)

def _tf_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_").lower()
