"""`/readyz`'s `kafka_access` check: ready while nothing is refused; not ready (never merely degraded) while the
cluster's ACLs refuse some work, naming the ACL; the same refusal on `/metrics` as `assetbus_kafka_access_denied`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from assetbus.consumers.observe.process_metrics import register_process_metrics
from assetbus.consumers.observe.readiness import ReadinessChecks
from assetbus.producers.kafka import AccessRefusals, KafkaAccessDenied

DENIED = KafkaAccessDenied("User:orders-scheduler", "Read", "topic 'orders.readiness.d'", "k:9096")


async def test_a_held_refusal_makes_the_service_unready_naming_the_acl_until_it_is_cleared() -> None:
    refusals = AccessRefusals()
    checks = ReadinessChecks(broker=None, database_url=None, cache_s=0, access=refusals)
    assert (await checks.check()).as_json()["status"] == "ready"
    refusals.refused("republishing unpublished runs", DENIED)
    report = await checks.check()
    assert (report.ready, report.status) == (False, "not_ready")
    assert report.checks["kafka_access"].detail == f"republishing unpublished runs: {DENIED}"
    refusals.cleared("republishing unpublished runs")
    assert (await checks.check()).ready


def test_the_refusal_is_a_metric_labelled_with_the_acl_and_gone_once_cleared() -> None:
    registry, refusals = CollectorRegistry(), AccessRefusals()
    register_process_metrics(registry, refusals)
    register_process_metrics(registry, refusals)  # a service started again with the same metrics: one collector
    labels = {"work": "lag gauges", "principal": DENIED.principal, "operation": "Read", "resource": DENIED.resource}
    assert registry.get_sample_value("assetbus_kafka_access_denied", labels) is None
    refusals.refused("lag gauges", DENIED)
    assert registry.get_sample_value("assetbus_kafka_access_denied", labels) == 1.0
    refusals.cleared("lag gauges")
    assert registry.get_sample_value("assetbus_kafka_access_denied", labels) is None
