"""The platform outputs apply as they are: Strimzi `kafka.strimzi.io/v1` resources that fit the v1 schema, with
the user authentication chosen; Terraform's JSON syntax naming the Mongey/kafka provider; resource names that
cannot collide."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from assetbus.plan import build_plan, render
from assetbus.plan.formats import k8s_name, strimzi_resources, terraform_document, tf_label
from assetbus.schemas import Topics
from tests.helpers import acls_of

_RFC1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
RFC1123_NAME = re.compile(rf"{_RFC1123_LABEL}(\.{_RFC1123_LABEL})*")
"""A Kubernetes resource name (an RFC 1123 subdomain, at most 253 characters)."""
TF_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
"""A Terraform resource label."""
STRIMZI_CRDS = Path(__file__).parent / "strimzi"
"""The `v1` `openAPIV3Schema` of Strimzi's own CRDs, `packaging/install/cluster-operator/043-Crd-kafkatopic.yaml`
and `044-Crd-kafkauser.yaml` of strimzi/strimzi-kafka-operator at 8541da1e (2026-08-22, after Strimzi 1.2.0:
`v1` is the only version the CRDs define, served and stored)."""


def _strict(schema: Any) -> Any:
    """The CRD's schema as `kubectl apply` checks it by default (strict field validation): an unknown field in an
    object whose fields the schema lists is an error, not pruned in silence."""
    if isinstance(schema, dict):
        strict = {key: _strict(value) for key, value in schema.items()}
        if "properties" in strict and "additionalProperties" not in strict \
                and not strict.get("x-kubernetes-preserve-unknown-fields"):
            strict["additionalProperties"] = False
        return strict
    return [_strict(item) for item in schema] if isinstance(schema, list) else schema


def _crd_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = _strict(json.loads((STRIMZI_CRDS / f"{kind.lower()}-v1.json").read_text()))
    schema["properties"]["apiVersion"] = {"const": "kafka.strimzi.io/v1"}
    schema["properties"]["kind"] = {"const": kind}
    schema["properties"]["metadata"] = {  # Kubernetes' own ObjectMeta, which the CRD leaves to the API server
        "type": "object", "required": ["name", "labels"], "properties": {
            "name": {"type": "string", "maxLength": 253, "pattern": f"^{RFC1123_NAME.pattern}$"},
            "labels": {"type": "object", "required": ["strimzi.io/cluster"]}}}
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata", "spec"})
    return schema


KAFKA_TOPIC_V1 = _crd_schema("KafkaTopic")
KAFKA_USER_V1 = _crd_schema("KafkaUser")


def _strimzi(**options: Any) -> list[dict[str, Any]]:
    plan = build_plan(Topics(), ["orders_daily", "orders-daily"], **options)
    documents = list(yaml.safe_load_all(render(plan, "strimzi", strimzi_cluster="prod")))
    assert documents == strimzi_resources(plan, "prod")
    return documents


@pytest.mark.parametrize("user_auth", ["scram-sha-512", "tls", "none"])
def test_strimzi_resources_fit_the_v1_schema(user_auth: str) -> None:
    documents = _strimzi(user_auth=user_auth)
    for document in documents:
        jsonschema_rs.validate(KAFKA_TOPIC_V1 if document["kind"] == "KafkaTopic" else KAFKA_USER_V1, document)
    users = [d for d in documents if d["kind"] == "KafkaUser"]
    assert {u["metadata"]["labels"]["strimzi.io/cluster"] for u in users} == {"prod"}
    if user_auth == "none":  # OAuth: the User Operator manages the ACLs only, of the principal User:<name>
        assert all("authentication" not in u["spec"] for u in users)
    else:
        assert {u["spec"]["authentication"]["type"] for u in users} == {user_auth}


def test_the_crd_schemas_refuse_what_strimzi_v1_does_not_know() -> None:
    documents = _strimzi()
    topic = next(d for d in documents if d["kind"] == "KafkaTopic")
    user = next(d for d in documents if d["kind"] == "KafkaUser")
    wrong = [
        {**topic, "spec": {**topic["spec"], "partitons": 3}},  # a misspelt field
        {**topic, "apiVersion": "kafka.strimzi.io/v1beta2"},  # a version Strimzi 1.x no longer serves
        {**user, "spec": {**user["spec"], "authorization": {**user["spec"]["authorization"], "acls": [
            {**user["spec"]["authorization"]["acls"][0], "operation": "Read"}]}}},  # v1beta2's singular field
        {**user, "spec": {**user["spec"], "authentication": {"type": "scram-sha-256"}}},
    ]
    for document in wrong:
        schema = KAFKA_TOPIC_V1 if document["kind"] == "KafkaTopic" else KAFKA_USER_V1
        assert not jsonschema_rs.is_valid(schema, document), document


def test_a_strimzi_user_carries_exactly_its_principals_acls() -> None:
    plan = build_plan(Topics(), user_auth="tls")
    users = {d["metadata"]["name"]: d for d in strimzi_resources(plan, "c") if d["kind"] == "KafkaUser"}
    assert set(users) == {principal.removeprefix("User:CN=") for principal in plan.principals.values()}
    persister = users["assetbus-persister"]["spec"]["authorization"]["acls"]
    planned = {(a.resource_type, a.resource_name, a.operation) for a in acls_of(plan, "persister")}
    assert {(acl["resource"]["type"], acl["resource"]["name"], op) for acl in persister
            for op in acl["operations"]} == planned
    assert sum(len(acl["operations"]) for u in users.values() for acl in u["spec"]["authorization"]["acls"]) == \
        len(plan.acls)


def test_a_principal_that_is_no_kubernetes_name_keeps_it_in_user_name() -> None:
    plan = build_plan(Topics(), principals={"sdk": "User:Tasks_Team"})
    sdk = next(d for d in strimzi_resources(plan, "c") if d["kind"] == "KafkaUser"
               and d["metadata"]["annotations"]["assetbus.io/roles"] == "sdk")
    assert sdk["spec"]["userName"] == "Tasks_Team" and RFC1123_NAME.fullmatch(sdk["metadata"]["name"])


def test_a_principal_strimzi_cannot_manage_is_refused_with_the_role() -> None:
    plan = build_plan(Topics(), principals={"persister": "User:CN=persister,O=acme"}, user_auth="tls")
    with pytest.raises(ValueError, match="persister: Strimzi's TLS users are the principal User:CN=<name>"):
        render(plan, "strimzi")
    with pytest.raises(ValueError, match="sdk: a Strimzi KafkaUser is the principal User:<name>"):
        render(build_plan(Topics(), principals={"sdk": "Group:tasks"}), "strimzi")
    with pytest.raises(ValueError, match=r"api: 'a+' is longer than a certificate's CN may be"):
        render(build_plan(Topics(), principals={"api": "User:CN=" + "a" * 65}, user_auth="tls"), "strimzi")


def test_roles_sharing_a_principal_are_one_strimzi_user() -> None:
    plan = build_plan(Topics(), principals=dict.fromkeys(("bridge", "forwarder", "triggerer"), "User:airflow"))
    airflow = [d for d in strimzi_resources(plan, "c") if d["metadata"]["name"] == "airflow"]
    assert len(airflow) == 1 and airflow[0]["metadata"]["annotations"]["assetbus.io/roles"] == \
        "bridge,forwarder,triggerer"


def test_dag_ids_that_sanitise_alike_get_distinct_stable_names() -> None:
    underscore, dash = "assetbus.readiness.orders_daily", "assetbus.readiness.orders-daily"
    assert k8s_name(dash) == dash  # a valid name is kept as it is
    assert k8s_name(underscore).startswith("assetbus.readiness.orders-daily-") and k8s_name(underscore) != dash
    assert tf_label(underscore) != tf_label(dash)
    assert k8s_name(underscore) == k8s_name(underscore) and tf_label(underscore) == tf_label(underscore)
    topics = {d["spec"].get("topicName", d["metadata"]["name"]): d["metadata"]["name"] for d in _strimzi()
              if d["kind"] == "KafkaTopic"}
    assert len(set(topics.values())) == len(topics) == 6 and topics[dash] == dash


@pytest.mark.parametrize("name", ["a" * 249, "X.." + "b" * 240, "9lives", "_x_", "Orders.Daily"])
def test_derived_names_are_valid_whatever_the_topic(name: str) -> None:
    assert RFC1123_NAME.fullmatch(k8s_name(name)) and len(k8s_name(name)) <= 253
    assert TF_LABEL.fullmatch(tf_label(name))


def test_terraform_is_json_syntax_with_the_mongey_provider() -> None:
    plan = build_plan(Topics(), ["orders_daily", "orders-daily"])
    document = json.loads(render(plan, "terraform"))
    assert document == terraform_document(plan)
    assert document["terraform"]["required_providers"]["kafka"]["source"] == "Mongey/kafka"
    assert document["terraform"]["required_providers"]["kafka"]["version"]
    topics, acls = document["resource"]["kafka_topic"], document["resource"]["kafka_acl"]
    assert sorted(t["name"] for t in topics.values()) == sorted(t.name for t in plan.topics)
    assert len(acls) == len(plan.acls) and all(TF_LABEL.fullmatch(label) for label in [*topics, *acls])
    assert topics[tf_label("assetbus.receipts")]["config"]["retention.ms"] == "86400000"
    group_read = next(acl for acl in acls.values() if acl["acl_principal"] == "User:assetbus-persister"
                      and acl["resource_type"] == "Group")
    assert group_read == {"acl_principal": "User:assetbus-persister", "acl_host": "*", "acl_operation": "Read",
                          "acl_permission_type": "Allow", "resource_type": "Group",
                          "resource_name": "assetbus-persister", "resource_pattern_type_filter": "Literal"}


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_terraform_reads_the_file_and_asks_for_mongey_kafka(tmp_path: Path) -> None:
    (tmp_path / "kafka.tf.json").write_text(render(build_plan(Topics(), ["orders_daily"]), "terraform"))
    done = subprocess.run(["terraform", "providers", "-no-color"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "provider[registry.terraform.io/mongey/kafka] ~> 0.12" in done.stdout
    assert "hashicorp/kafka" not in done.stdout
