"""Every guide runs as a reader follows it: README.md and docs/*.md, one test per guide.

How to write a guide the collector can run is in docs/README.md.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.docs.guide import parse_guide
from tests.docs.runner import run_guide
from tests.docs.shell import Shell

REPO = Path(__file__).resolve().parents[2]
GUIDES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("guide", GUIDES, ids=[str(g.relative_to(REPO)) for g in GUIDES])
def test_guide_runs_as_written(guide: Path, guide_shell: Shell) -> None:
    steps = parse_guide(guide)
    report = run_guide(str(guide.relative_to(REPO)), steps, guide_shell)
    slowest = sorted(report.timings, key=lambda t: -t[1])[:5]
    print(f"{report.guide}: {sum(t for _, t in report.timings):.1f}s in steps; slowest (line, s): "
          + ", ".join(f"{line}: {seconds:.1f}" for line, seconds in slowest))
    for skipped in report.skipped:
        warnings.warn(f"{report.guide}: not run: {skipped}", stacklevel=1)
    if report.failures:
        pytest.fail(report.summary(), pytrace=False)
