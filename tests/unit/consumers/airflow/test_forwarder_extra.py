"""What the forwarder puts in an Airflow asset event's `extra`, and how it reads its event id back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from assetbus.consumers.airflow.forwarder import EXTRA_KEY, airflow_extra, assetbus_event_id
from assetbus.schemas import AssetEvent, AssetRef, Provenance


def _event(**extra: object) -> AssetEvent:
    return AssetEvent(event_id=41, asset=AssetRef(name="orders", uri="s3://orders"), extra=dict(extra),
                      partition_key="2026-11-20T05", partition_date=datetime(2026, 11, 20, 5, tzinfo=UTC),
                      dedupe_key="batch-41", command_id=uuid.uuid4(),
                      source=Provenance(kind="task", dag_id="ingest", run_id="r1", task_id="load", map_index=-1,
                                        try_number=2),
                      timestamp=datetime(2026, 11, 20, 6, tzinfo=UTC))


def test_extra_keeps_the_users_keys_and_adds_event_id_dedupe_key_and_provenance() -> None:
    extra = airflow_extra(_event(rows=7, path="s3://orders/41"))
    assert extra["rows"] == 7 and extra["path"] == "s3://orders/41"
    ours = extra[EXTRA_KEY]
    assert ours["event_id"] == 41 and ours["dedupe_key"] == "batch-41"
    assert ours["source"] == {"kind": "task", "dag_id": "ingest", "run_id": "r1", "task_id": "load", "map_index": -1,
                              "try_number": 2}
    assert ours["partition_date"] == "2026-11-20T05:00:00+00:00"


def test_the_users_own_assetbus_key_cannot_pass_for_ours() -> None:
    assert airflow_extra(_event(assetbus={"event_id": 7}))[EXTRA_KEY]["event_id"] == 41


def test_an_airflow_event_not_posted_by_the_forwarder_has_no_event_id() -> None:
    assert assetbus_event_id({"extra": {EXTRA_KEY: {"event_id": 41}}}) == 41
    others: list[dict[str, Any]] = [{"extra": {}}, {"extra": None}, {"extra": {EXTRA_KEY: "x"}},
                                    {"extra": {EXTRA_KEY: {"event_id": "41"}}}]
    for other in others:
        assert assetbus_event_id(other) is None
