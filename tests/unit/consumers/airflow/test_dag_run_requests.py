"""What the bridge asks of Airflow for a readiness signal: a deterministic run id and references in conf."""

from __future__ import annotations

from datetime import UTC, datetime

from assetbus.consumers.airflow import CONF_KEY, dag_run_id, run_conf
from assetbus.schemas import Provenance, ReadinessSignal, SourceKind, TriggeringEvent


def signal(run_id: str = "0b5c0e7e-run") -> ReadinessSignal:
    source = Provenance(kind=SourceKind.TASK, dag_id="up", run_id="r", task_id="t", map_index=-1, try_number=1)
    events = [TriggeringEvent(event_id=i, asset_name="orders", partition_key="2026-10-01", source=source,
                              timestamp=datetime(2026, 10, 1, tzinfo=UTC)) for i in (41, 42)]
    return ReadinessSignal(run_id=run_id, dag_id="orders_by_partition", partition_key="2026-10-01",
                           partition_date=datetime(2026, 10, 1, tzinfo=UTC), generation=1, events=events,
                           created_at=datetime(2026, 10, 1, 1, tzinfo=UTC))


def test_the_airflow_run_id_is_the_same_for_every_delivery_of_a_signal() -> None:
    assert dag_run_id(signal()) == dag_run_id(signal()) == "assetbus__0b5c0e7e-run"
    assert dag_run_id(signal("other")) != dag_run_id(signal())


def test_conf_carries_the_run_and_the_triggering_event_ids_but_no_payloads() -> None:
    conf = run_conf(signal())[CONF_KEY]
    assert conf["event_ids"] == [41, 42]
    assert conf["partition_key"] == "2026-10-01" and conf["run_id"] == "0b5c0e7e-run"
    assert conf["partition_date"] == "2026-10-01T00:00:00+00:00"
    assert all(set(e) == {"event_id", "asset", "partition_key", "partition_date", "stored_at", "source"}
               for e in conf["events"])
    assert all(e["source"]["dag_id"] and e["source"]["run_id"] for e in conf["events"])  # provenance
