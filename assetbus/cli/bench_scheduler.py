"""`assetbus bench scheduler`: placeholder until its benchmark lands."""

from __future__ import annotations

from assetbus.cli.common import fail


def scheduler() -> None:
    """Benchmark (not yet implemented)."""
    fail("the scheduler benchmark is not implemented yet")
