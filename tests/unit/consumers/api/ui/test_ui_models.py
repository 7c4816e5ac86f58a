"""The page's JSON views: a DAG lists every asset its nested condition waits for; the page ships in the package."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.resources import files

from assetbus.consumers.api.ui.models import DagOut, RunOut
from assetbus.consumers.scheduler import AllOf, AnyOf, AssetWait, ConsumerDag, HourlyToDaily
from assetbus.consumers.storage.dags import DagRow
from assetbus.consumers.storage.runs import RunRow

NOW = datetime(2026, 10, 1, tzinfo=UTC)


def test_a_dag_lists_the_assets_of_its_nested_condition() -> None:
    dag = ConsumerDag(dag_id="report", schedule=AllOf(AssetWait("orders", mapping=HourlyToDaily(timezone="UTC")),
                                                      AnyOf(AssetWait("eu"), AssetWait("us"))))
    row = DagRow("report", "/dags/r.py", dag.definition(), dag.fingerprint(), True, True, NOW, NOW)
    out = DagOut.of(row, {"success": 2}, (1, 3))
    assert out.assets == ["eu", "orders", "us"]
    assert (out.runs, out.waiting_partitions, out.queued_events) == ({"success": 2}, 1, 3)


def test_a_run_carries_its_triggering_event_ids_and_its_page_cursor() -> None:
    row = RunRow(41, "r-1", "report", "2026-10-01", None, 1, [{"event_id": 7}, {"event_id": 9}], "scheduler",
                 "failed", True, 1, "worker-1", "ValueError: boom", NOW, NOW, NOW)
    out = RunOut.of(row)
    assert (out.id, out.event_ids, out.status, out.detail) == (41, [7, 9], "failed", "ValueError: boom")


def test_the_page_and_its_assets_ship_in_the_package() -> None:
    static = files("assetbus.consumers.api.ui") / "static"
    page = (static / "index.html").read_text(encoding="utf-8")
    assert '/ui/static/app.js' in page and '/ui/static/style.css' in page
    script = (static / "app.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script  # text is always set with textContent (no injection from event data)
