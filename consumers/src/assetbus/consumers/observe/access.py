"""`assetbus_kafka_access_denied`: 1 per piece of a service's work that the cluster's ACLs refuse now.

Read from the service's `AccessRefusals` at each scrape (the same record `/readyz` names the ACL from), so
an alert can fire on a refusal that leaves the process running: the scheduler's re-publishing without Read
on the readiness topics, the API's lag gauges without Describe on the groups.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from assetbus.producers.kafka.access import AccessRefusals

__all__ = ["RefusalsCollector", "register_refusals"]

NAME = "assetbus_kafka_access_denied"


class RefusalsCollector(Collector):
    def __init__(self, refusals: AccessRefusals) -> None:
        self.refusals = refusals

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, "1 while the cluster's ACLs refuse this work of the service (the labels "
                                   "name the operation and resource to grant; /readyz names it too).",
                                   labels=["work", "principal", "operation", "resource"])
        for work, denied in sorted(self.refusals.current().items()):
            family.add_metric([work, denied.principal, denied.operation, denied.resource], 1.0)
        yield family


_registered: weakref.WeakKeyDictionary[CollectorRegistry, RefusalsCollector] = weakref.WeakKeyDictionary()


def register_refusals(registry: CollectorRegistry, refusals: AccessRefusals) -> None:
    """Serve `assetbus_kafka_access_denied` of `refusals` on `registry` (a registry that has it already reads
    the new `refusals` from now on: a service started again with the same metrics)."""
    if (collector := _registered.get(registry)) is not None:
        collector.refusals = refusals
        return
    collector = _registered[registry] = RefusalsCollector(refusals)
    registry.register(collector)
