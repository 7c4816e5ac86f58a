"""The page's JSON views: a DAG lists every asset its nested condition waits for; the page ships in the package."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.resources import files
from uuid import UUID

from assetbus.consumers.api.ui.models import DagOut, DeadLetterOut, EventOut, RunOut
from assetbus.consumers.observe.deadletters import DeadLetterRecord
from assetbus.consumers.scheduler import AllOf, AnyOf, AssetWait, ConsumerDag, HourlyToDaily
from assetbus.consumers.storage.dags import DagRow
from assetbus.consumers.storage.events import StoredEvent
from assetbus.consumers.storage.runs import RunRow

NOW = datetime(2026, 10, 1, tzinfo=UTC)


def test_a_dag_lists_the_assets_of_its_nested_condition() -> None:
    dag = ConsumerDag(dag_id="report", schedule=AllOf(AssetWait("orders", mapping=HourlyToDaily(timezone="UTC")),
                                                      AnyOf(AssetWait("eu"), AssetWait("us"))))
    row = DagRow("report", "/dags/r.py", dag.definition(), dag.fingerprint(), True, True, NOW, NOW)
    out = DagOut.of(row, {"success": 2}, (1, 3))
    assert out.assets == ["eu", "orders", "us"]
    assert (out.runs, out.waiting_partitions, out.queued_events) == ({"success": 2}, 1, 3)


def test_a_dag_whose_definition_cannot_be_read_lists_no_assets_and_is_still_shown() -> None:
    definition = {"dag_id": "report", "schedule": {"kind": "every_minute", "asset": "orders"}}
    out = DagOut.of(DagRow("report", "/dags/r.py", definition, "f", True, True, NOW, NOW), {}, (0, 0))
    assert (out.dag_id, out.assets, out.active) == ("report", [], True)


def test_a_run_carries_its_triggering_event_ids_and_its_page_cursor() -> None:
    row = RunRow(41, "r-1", "report", "2026-10-01", None, 1, [{"event_id": 7}, {"event_id": 9}], "scheduler",
                 "failed", True, 1, "worker-1", "ValueError: boom", NOW, NOW, NOW)
    out = RunOut.of(row)
    assert (out.id, out.event_ids, out.status, out.detail) == (41, [7, 9], "failed", "ValueError: boom")


def test_an_event_and_a_dead_letter_are_shown_with_their_asset_and_their_source() -> None:
    stored = StoredEvent(3, 1, "orders", "s3://orders/", "task", "batch-41", UUID(int=7), {"rows": 41}, "2026-10-01",
                         NOW, "task", "ingest", "run-1", "load", -1, 2, NOW)
    assert EventOut.of(stored).model_dump() == {
        "id": 3, "asset": "orders", "uri": "s3://orders/", "partition_key": "2026-10-01", "partition_date": NOW,
        "dedupe_key": "batch-41", "extra": {"rows": 41}, "source_kind": "task", "dag_id": "ingest", "run_id": "run-1",
        "task_id": "load", "map_index": -1, "try_number": 2, "created_at": NOW}
    letter = DeadLetterRecord("p.emissions.dlq", 0, 5, NOW, "orders", "{", 1, "undecodable", "bad JSON",
                              "p.emissions", 2, 9, {"reason": "undecodable"})
    assert DeadLetterOut.of(letter).model_dump() == {
        "partition": 0, "offset": 5, "timestamp": NOW, "key": "orders", "reason": "undecodable", "error": "bad JSON",
        "source": "p.emissions/2@9", "value_preview": "{", "value_size": 1}


def test_the_page_and_its_assets_ship_in_the_package() -> None:
    static = files("assetbus.consumers.api.ui") / "static"
    page = (static / "index.html").read_text(encoding="utf-8")
    assert '/ui/static/app.js' in page and '/ui/static/style.css' in page
    script = (static / "app.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script  # text is always set with textContent (no injection from event data)
