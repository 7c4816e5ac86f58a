"""`assetbus bench emit`: placeholder until its benchmark lands."""

from __future__ import annotations

from assetbus.cli.common import fail


def emit() -> None:
    """Benchmark (not yet implemented)."""
    fail("the emit benchmark is not implemented yet")
