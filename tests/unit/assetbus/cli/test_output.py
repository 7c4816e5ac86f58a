"""`json_line`: one line of JSON, with a float that is not finite written as null."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from assetbus.cli.output import json_line


@dataclass
class Row:
    p99_ms: float
    n: int


def test_non_finite_floats_become_null_and_the_line_is_strict_json() -> None:
    line = json_line({"p50": math.nan, "rate": 12.5, "rows": [Row(math.inf, 3)], "load": (1.0, 2.0)})
    assert "\n" not in line
    assert json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {
        "p50": None, "rate": 12.5, "rows": [{"p99_ms": None, "n": 3}], "load": [1.0, 2.0]}
