"""Timetables are read from Airflow's `serialized_dag` table: the newest version of each DAG, compressed or not."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

from assetbus.consumers.airflow.declared import read_serialized_timetables


def _dag(kind: str) -> str:
    return json.dumps({"__version": 3, "dag": {"dag_id": "x", "timetable": {"__type": kind, "__var": {}}}})


async def test_the_newest_serialized_version_wins_and_compressed_rows_are_read(tmp_path: Path) -> None:
    path = tmp_path / "airflow.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE serialized_dag (dag_id TEXT, data TEXT, data_compressed BLOB, last_updated TEXT)")
        db.executemany("INSERT INTO serialized_dag VALUES (?, ?, ?, ?)", [
            ("orders", _dag("new"), None, "2026-10-02"),
            ("orders", _dag("old"), None, "2026-10-01"),
            ("clicks", None, zlib.compress(_dag("compressed").encode()), "2026-10-01"),
            ("other", _dag("unasked"), None, "2026-10-01"),
        ])
    found = await read_serialized_timetables(f"sqlite:///{path}", ["orders", "clicks", "missing"])
    assert {dag_id: tt["__type"] for dag_id, tt in found.items()} == {"orders": "new", "clicks": "compressed"}
    assert await read_serialized_timetables(f"sqlite:///{path}", []) == {}
