"""Run ids of a batch are canonical, distinct random (version 4, RFC 4122) UUIDs."""

from __future__ import annotations

import uuid

from assetbus.consumers.scheduler.apply import new_run_ids


def test_a_batch_of_run_ids_are_distinct_version_4_uuids_in_canonical_form() -> None:
    ids = new_run_ids(1000)
    assert len(set(ids)) == 1000
    for run_id in ids:
        parsed = uuid.UUID(run_id)
        assert str(parsed) == run_id and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_no_runs_need_no_ids() -> None:
    assert new_run_ids(0) == []
