"""Payloads built on the hot path without models still validate as the wire contract."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from assetbus.consumers.scheduler.payload import events_json, from_stored, signal_json, upstream_event
from assetbus.consumers.storage.runs import RunRow
from assetbus.schemas import Provenance, ReadinessSignal, SourceKind, TriggeringEvent
from assetbus.schemas.codecs import source_dict

TASK = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="r1", task_id="load", map_index=-1, try_number=2)
DAG = Provenance(kind=SourceKind.DAG, dag_id="export", run_id="r9")
HOUR = datetime(2026, 10, 25, 5, tzinfo=ZoneInfo("Europe/Amsterdam"))
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_an_event_payload_is_a_triggering_event() -> None:
    event = upstream_event(7, "orders", "batch-41", HOUR, source_dict(TASK), NOW)
    parsed = TriggeringEvent.model_validate(event.payload)
    assert (parsed.event_id, parsed.partition_key, parsed.source) == (7, "batch-41", TASK)
    assert parsed.partition_date == HOUR and parsed.timestamp == NOW


def test_a_payload_read_back_keeps_key_and_date() -> None:
    event = upstream_event(7, "orders", "batch-41", HOUR, source_dict(DAG), NOW)
    again = from_stored(event.json)
    assert (again.event_id, again.asset_name, again.partition_key, again.partition_date) == (
        7, "orders", "batch-41", HOUR)


def test_a_signal_is_a_readiness_signal_with_its_run_id() -> None:
    events = [upstream_event(i, "orders", None, None, source_dict(DAG), NOW).payload for i in (1, 2)]
    run = RunRow(1, "run-1", "daily", "2026-10-01", HOUR, 3, events, "replay", "queued", False, 0, None, None, NOW,
                 None, None)
    signal = ReadinessSignal.model_validate_json(signal_json(run))
    assert (signal.run_id, signal.dag_id, signal.partition_key, signal.generation, signal.origin) == (
        "run-1", "daily", "2026-10-01", 3, "replay")
    assert signal.partition_date == HOUR and [e.event_id for e in signal.events] == [1, 2]
    assert signal.events[0].source == DAG


def test_a_signal_built_from_serialized_events_is_the_same_signal() -> None:
    events = [upstream_event(i, "orders", f"k{i}", HOUR, source_dict(TASK), NOW) for i in (1, 2)]
    plain = RunRow(1, "run-1", "d", "k", None, 1, [e.payload for e in events], "scheduler", "queued", False, 0, None,
                   None, NOW, None, None)
    fast = dataclasses.replace(plain, events_json=events_json(events))
    assert fast.events_json is not None and plain.events_json is None
    assert ReadinessSignal.model_validate_json(signal_json(fast)) == ReadinessSignal.model_validate_json(
        signal_json(plain))
