"""`assetbus bench scale`'s pinning options are refused by name before anything runs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app


@pytest.mark.parametrize(("args", "said"), [
    (["--schedulers", "1", "--pin-infra", "x"], "CPUs 'x': write them as 1, 0,1 or 2-3"),
    (["--schedulers", "1", "--pin-schedulers", "4096"], "this machine offers"),
    (["--pin-infra", "0"], "give --schedulers too"),
])
def test_pinning_that_cannot_work_is_refused(args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["bench", "scale", "--rates", "", "--persisters", "", *args])
    assert result.exit_code == 1
    assert said in result.output
