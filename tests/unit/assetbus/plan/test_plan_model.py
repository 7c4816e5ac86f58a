"""The plan's roles and ACLs: each role gets what its code does on the wire, every group derives from the prefix,
and principals can be named per role."""

from __future__ import annotations

import pytest

from assetbus.plan import PRINCIPALS, Acl, build_plan, parse_principals
from assetbus.schemas import Topics
from tests.helpers import acls_of


def _grants(acls: list[Acl]) -> set[tuple[str, str, str, str]]:
    return {(a.resource_type, a.pattern_type, a.resource_name, a.operation) for a in acls}


def test_the_airflow_roles_and_subscribers_read_what_their_code_reads() -> None:
    plan = build_plan(Topics(prefix="orders"), ["orders_daily"])
    assert _grants(acls_of(plan, "forwarder")) == {("topic", "literal", "orders.asset-events", "Read"),
                                                  ("group", "literal", "orders-airflow-forwarder", "Read")}
    assert _grants(acls_of(plan, "triggerer")) == {  # watchers in groups <prefix>-watcher.<dag_id>; the partition
        ("topic", "prefixed", "orders.readiness.", "Read"),  # sensor's trigger reads asset events by assignment
        ("group", "prefixed", "orders-watcher.", "Read"),
        ("topic", "literal", "orders.asset-events", "Read")}
    assert _grants(acls_of(plan, "subscriber")) == {("topic", "prefixed", "orders.readiness.", "Read"),
                                                   ("group", "prefixed", "orders-subscriber.", "Read")}
    assert ("group", "literal", "orders-airflow-bridge", "Read") in _grants(acls_of(plan, "bridge"))


def test_every_group_derives_from_the_prefix() -> None:
    plan = build_plan(Topics(prefix="team-a"), ["d"])
    groups = {acl.resource_name for acl in plan.acls if acl.resource_type == "group"}
    assert groups and all(name.startswith("team-a-") for name in groups), groups
    assert not any("assetbus" in acl.resource_name for acl in plan.acls)


def test_principals_default_to_the_prefix_and_role_and_follow_tls_subjects() -> None:
    assert build_plan(Topics(prefix="orders")).principals == {role: f"User:orders-{role}" for role in PRINCIPALS}
    tls = build_plan(Topics(prefix="orders"), user_auth="tls")
    assert tls.principals["persister"] == "User:CN=orders-persister" and tls.user_auth == "tls"


def test_a_principal_named_per_role_replaces_only_that_role() -> None:
    named = parse_principals(["persister=User:CN=persister,O=acme", "sdk=User:tasks"])
    plan = build_plan(Topics(), principals=named)
    assert plan.principals["persister"] == "User:CN=persister,O=acme" and plan.principals["sdk"] == "User:tasks"
    assert plan.principals["scheduler"] == "User:assetbus-scheduler"
    assert {a.principal for a in acls_of(plan, "persister")} == {"User:CN=persister,O=acme"}


def test_roles_sharing_a_principal_get_each_acl_once() -> None:
    shared = dict.fromkeys(("bridge", "forwarder", "triggerer"), "User:airflow")
    plan = build_plan(Topics(), principals=shared)
    assert len(plan.acls) == len(set(plan.acls))
    assert set(acls_of(plan, "bridge")) == set(acls_of(plan, "triggerer")) and plan.roles_of("User:airflow") == [
        "bridge", "forwarder", "triggerer"]


@pytest.mark.parametrize(("value", "says"), [
    ("persister", "ROLE=PRINCIPAL"), ("nobody=User:x", "ROLE=PRINCIPAL"), ("sdk=tasks", "TYPE:NAME"),
    ("sdk=User:", "TYPE:NAME")])
def test_a_malformed_principal_option_says_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_principals([value])


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="no role airflow"):
        build_plan(Topics(), principals={"airflow": "User:a"})
