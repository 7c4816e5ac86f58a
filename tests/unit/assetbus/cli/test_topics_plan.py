"""`assetbus topics plan`: the checked-in plan is the default layout's; each format says the same thing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from assetbus.cli.main import app
from assetbus.plan import PRINCIPALS, Plan, as_document, build_plan, render
from assetbus.schemas import Topics
from tests.helpers import acls_of

CHECKED_IN = Path(__file__).parents[4] / "docs" / "topics-plan.json"


@pytest.fixture
def default_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    for name in ("ASSETBUS_TOPIC_PREFIX", "ASSETBUS_TOPIC_PARTITIONS", "ASSETBUS_TOPIC_REPLICATION_FACTOR",
                 "ASSETBUS_TOPIC_MIN_INSYNC_REPLICAS", "ASSETBUS_CREATE_TOPICS",
                 "ASSETBUS_SCHEDULER_READINESS_PARTITIONS"):
        monkeypatch.delenv(name, raising=False)


def test_the_checked_in_plan_is_what_the_cli_prints_for_the_default_layout(default_environment: None) -> None:
    result = CliRunner().invoke(app, ["topics", "plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(CHECKED_IN.read_text())
    assert CHECKED_IN.read_text() == render(build_plan(Topics()), "json")


def test_no_create_mode_drops_the_create_acls_and_only_them(default_environment: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_CREATE_TOPICS", "false")
    result = CliRunner().invoke(app, ["topics", "plan", "--format", "yaml"])
    assert result.exit_code == 0, result.output
    planned = yaml.safe_load(result.output)
    with_create = as_document(build_plan(Topics()))
    operations = [acl["operation"] for p in planned["principals"].values() for acl in p["acls"]]
    assert "Create" not in operations and planned["create_topics"] is False
    assert len(operations) == sum(len(p["acls"]) for p in with_create["principals"].values()) - 3  # cli, scheduler,
    # bridge


def test_readiness_topics_have_the_partitions_the_scheduler_is_told_to_create(
        default_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_SCHEDULER_READINESS_PARTITIONS", "1")
    result = CliRunner().invoke(app, ["topics", "plan", "--dag", "orders_daily"])
    assert result.exit_code == 0, result.output
    (readiness,) = [t for t in json.loads(result.output)["topics"] if t["name"] == "assetbus.readiness.orders_daily"]
    assert readiness["partitions"] == 1

    monkeypatch.setenv("ASSETBUS_SCHEDULER_READINESS_PARTITIONS", "0")
    result = CliRunner().invoke(app, ["topics", "plan"])
    assert result.exit_code == 2
    assert "invalid setting ASSETBUS_SCHEDULER_READINESS_PARTITIONS: Input should be greater than or equal to 1" \
        in result.output


def _replicas(plan: Plan) -> int:
    return sum(topic.partitions * topic.replication_factor for topic in plan.topics)


def test_every_principal_has_acls_and_readiness_acls_do_not_grow_with_dags() -> None:
    ten, thousand = (build_plan(Topics(), [f"dag_{n}" for n in range(count)]) for count in (10, 1000))
    assert set(ten.principals) == set(PRINCIPALS) and all(acls_of(ten, role) for role in PRINCIPALS)
    assert ten.acls == thousand.acls
    assert (len(ten.topics), _replicas(ten)) == (14, 147)  # (19 core partitions + 10 x 3) x RF 3
    assert (len(thousand.topics), _replicas(thousand)) == (1004, 9057)


def test_the_sdk_may_only_write_commands_and_read_receipts() -> None:
    plan = build_plan(Topics(prefix="orders"))
    assert {(a.resource_name, a.operation) for a in acls_of(plan, "sdk")} == {("orders.emissions", "Write"),
                                                                            ("orders.receipts", "Read")}
    assert plan.principals["sdk"] == "User:orders-sdk"


def test_strimzi_and_terraform_carry_every_topic_and_acl() -> None:
    plan = build_plan(Topics(), ["orders_daily"])
    documents = list(yaml.safe_load_all(render(plan, "strimzi", strimzi_cluster="prod")))
    kafka_topics = {d["spec"].get("topicName", d["metadata"]["name"]): d for d in documents
                    if d["kind"] == "KafkaTopic"}
    assert set(kafka_topics) == {t.name for t in plan.topics}
    assert kafka_topics["assetbus.receipts"]["spec"]["config"]["retention.ms"] == "86400000"
    users = [d for d in documents if d["kind"] == "KafkaUser"]
    assert sum(len(acl["operations"]) for u in users for acl in u["spec"]["authorization"]["acls"]) == len(plan.acls)
    terraform = json.loads(render(plan, "terraform"))["resource"]
    assert len(terraform["kafka_topic"]) == len(plan.topics) and len(terraform["kafka_acl"]) == len(plan.acls)


def test_principals_and_user_auth_are_set_from_the_cli(default_environment: None) -> None:
    result = CliRunner().invoke(app, ["topics", "plan", "--format", "strimzi", "--user-auth", "tls",
                                      "--principal", "persister=User:CN=ingest", "--principal", "sdk=User:CN=tasks"])
    assert result.exit_code == 0, result.output
    users = {d["metadata"]["annotations"]["assetbus.io/roles"]: d for d in yaml.safe_load_all(result.output)
             if d["kind"] == "KafkaUser"}
    assert users["persister"]["metadata"]["name"] == "ingest" and users["sdk"]["metadata"]["name"] == "tasks"
    assert users["scheduler"]["metadata"]["name"] == "assetbus-scheduler"
    assert {u["spec"]["authentication"]["type"] for u in users.values()} == {"tls"}
    planned = json.loads(CliRunner().invoke(app, ["topics", "plan", "--principal", "sdk=User:CN=tasks,O=acme",
                                                  "--subscriber-groups", "reports-"]).output)
    assert planned["principals"]["sdk"]["principal"] == "User:CN=tasks,O=acme"
    assert {(a["resource_type"], a["pattern_type"], a["resource_name"])
            for a in planned["principals"]["subscriber"]["acls"]} == {("group", "prefixed", "reports-"),
                                                                       ("topic", "prefixed", "assetbus.readiness.")}


@pytest.mark.parametrize(("options", "says"), [
    (["--user-auth", "kerberos"], "--user-auth must be one of scram-sha-512, tls, none, not 'kerberos'"),
    (["--principal", "airflow=User:a"], "--principal takes ROLE=PRINCIPAL with ROLE one of sdk, persister"),
    (["--format", "strimzi", "--user-auth", "tls", "--principal", "sdk=User:tasks"],
     "sdk: Strimzi's TLS users are the principal User:CN=<name>")])
def test_a_wrong_principal_or_user_auth_is_one_line(default_environment: None, options: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["topics", "plan", *options])
    assert result.exit_code == 1 and says in result.output, result.output


def test_an_unknown_format_is_one_line(default_environment: None) -> None:
    result = CliRunner().invoke(app, ["topics", "plan", "--format", "xml"])
    assert result.exit_code == 1 and "--format must be one of json, yaml, strimzi, terraform" in result.output
