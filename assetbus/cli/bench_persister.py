"""`assetbus bench persister`: placeholder until its benchmark lands."""

from __future__ import annotations

from assetbus.cli.common import fail


def persister() -> None:
    """Benchmark (not yet implemented)."""
    fail("the persister benchmark is not implemented yet")
