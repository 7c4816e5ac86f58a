"""`assetbus doctor`'s closing line says "all checks passed" only when every check is ok."""

from __future__ import annotations

from assetbus.cli.doctor import Check, _verdict


def test_a_warning_is_never_reported_as_all_checks_passed() -> None:
    ok, warn, fail = Check("a", "ok", "fine"), Check("b", "warn", "look"), Check("c", "fail", "broken")
    assert "all checks passed" in _verdict([ok, ok])
    assert "all checks passed" not in _verdict([ok, warn]) and "1 warning(s)" in _verdict([ok, warn])
    assert "1 check(s) failed" in _verdict([ok, warn, fail]) and "1 warning(s)" in _verdict([ok, warn, fail])
