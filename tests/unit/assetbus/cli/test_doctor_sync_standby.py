"""`assetbus doctor`'s synchronous-standby check, from what `pg_stat_replication` shows."""

from __future__ import annotations

from datetime import UTC, datetime

from assetbus.cli.doctor import _synchronous_standby
from assetbus.consumers.storage.engine import DatabaseStatus


def status(names: str, standbys: list[tuple[str, str | None, str | None]]) -> DatabaseStatus:
    return DatabaseStatus("15.1", datetime.now(UTC), [], [], names, standbys)


def test_no_synchronous_standby_named_means_no_check() -> None:
    assert _synchronous_standby(status("", [("s", "streaming", "async")])) == []


def test_a_named_standby_in_sync_is_ok_and_named() -> None:
    [check] = _synchronous_standby(status("ANY 1 (a, b)", [("a", "streaming", "quorum"), ("b", "catchup", "quorum")]))
    assert check.status == "ok" and "a (streaming, quorum)" in check.detail and "b (" not in check.detail


def test_no_standby_in_sync_fails_receipts_stall() -> None:
    Standbys = list[tuple[str, str | None, str | None]]
    cases: list[Standbys] = [[], [("other", "streaming", "async")]]
    for standbys in cases:
        [check] = _synchronous_standby(status("standby", standbys))
        assert check.status == "fail" and "receipts stall" in check.detail


def test_states_this_role_cannot_read_are_a_warning() -> None:
    [check] = _synchronous_standby(status("standby", [("standby", None, None)]))
    assert check.status == "warn" and "pg_monitor" in check.fix
