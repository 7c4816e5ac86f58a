"""`assetbus bench all`'s table of figures."""

from __future__ import annotations

import pytest

from assetbus.cli.bench_all import cell


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (0.5571, "", "0.56"),  # a share of the PostgreSQL ceiling keeps its second place
    (12.345, "ms", "12.3 ms"),
    (40115.2, "/s", "40,115 /s"),
])
def test_the_figures_table_shows_shares_to_two_places(value: float, unit: str, shown: str) -> None:
    assert cell(value, unit) == shown
