"""Every guide runs as a reader follows it: README.md and docs/*.md, one test per guide.

How to write a guide the collector can run is in docs/README.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.docs.guide import check_something_runs, parse_guide
from tests.docs.runner import run_guide
from tests.docs.shell import Shell

REPO = Path(__file__).resolve().parents[2]
GUIDES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_HERE = [guide for guide in GUIDES if guide.name != "airflow.md"]
"""docs/airflow.md starts a real Airflow: tests/docs/test_airflow_guide_runs.py runs it (marker `airflow`)."""


@pytest.mark.integration
@pytest.mark.parametrize("guide", RUN_HERE, ids=[str(g.relative_to(REPO)) for g in RUN_HERE])
def test_guide_runs_as_written(guide: Path, request: pytest.FixtureRequest) -> None:
    steps = parse_guide(guide)
    check_something_runs(guide.read_text(encoding="utf-8"), steps)
    if not any(step.runs for step in steps):  # nothing to run: no database, topics or shell needed
        return
    shell: Shell = request.getfixturevalue("guide_shell")
    report = run_guide(str(guide.relative_to(REPO)), steps, shell)
    report.announce()
    if report.failures:
        pytest.fail(report.summary(), pytrace=False)


def _links(guide: Path) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(guide.read_text(encoding="utf-8"))
    inline = [child for token in tokens for child in token.children or []]
    return [str(child.attrs["href"]) for child in inline if child.type == "link_open"]


@pytest.mark.parametrize("guide", GUIDES, ids=[str(g.relative_to(REPO)) for g in GUIDES])
def test_guide_links_stay_inside_the_repository_and_resolve(guide: Path) -> None:
    broken = []
    for href in _links(guide):
        target = (guide.parent / href.split("#", 1)[0]).resolve()
        if "://" in href or not target.is_relative_to(REPO) or not target.exists():
            broken.append(href)
    assert not broken, f"{guide.relative_to(REPO)} links outside the repository or to nothing: {broken}"
