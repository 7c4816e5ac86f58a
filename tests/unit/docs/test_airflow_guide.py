"""docs/airflow.md runs in CI (tests/docs/test_airflow_guide_runs.py, against a real Airflow 3.3). What that run
cannot show is checked here: each Python block it skips is an excerpt of an example that a test runs, the one
command it skips (the reader's `pip install` of Airflow and the SDK) is what `make airflow-venv` installs, and
every consumer example has a producer example the walk-through runs with it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.guide import parse_guide, runs_elsewhere

REPO = Path(__file__).resolve().parents[3]
GUIDE = REPO / "docs" / "airflow.md"
EXAMPLES = [*sorted((REPO / "examples" / "airflow").rglob("*.py"))]
EXAMPLE_DAGS = REPO / "examples" / "airflow" / "dags"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\b[^\n]*\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)


def test_the_guide_runs_itself_and_says_nothing_runs_elsewhere() -> None:
    steps = parse_guide(GUIDE)
    assert runs_elsewhere(GUIDE.read_text()) is None
    assert sum(1 for step in steps if step.runs) >= 8
    run = "\n".join(step.source for step in steps if step.runs)
    for command in ("assetbus infra up", "assetbus migrate", "assetbus token worker", "assetbus run persister",
                    "assetbus run scheduler", "assetbus run api", "assetbus run airflow-bridge", "airflow db migrate",
                    "airflow api-server", "airflow scheduler", "airflow dag-processor", "airflow dags unpause",
                    "airflow dags trigger", "assetbus runs list"):
        assert command in run, f"the walk-through does not run {command!r}"
    assert "--dag " not in run.split("assetbus run airflow-bridge", 1)[1].split("\n", 1)[0]  # no `--dag`


def test_the_services_start_in_order() -> None:
    run = "\n".join(step.source for step in parse_guide(GUIDE) if step.runs)
    order = ["assetbus infra up", "assetbus migrate", "assetbus run persister", "assetbus run scheduler",
             "assetbus run api", "assetbus run airflow-bridge", "airflow api-server", "airflow dags unpause",
             "airflow dags trigger"]
    at = [run.index(command) for command in order]
    assert at == sorted(at), dict(zip(order, at, strict=True))


def test_every_python_block_is_an_excerpt_of_an_example_the_tests_run() -> None:
    sources = [path.read_text() for path in EXAMPLES]
    found = blocks("python")
    assert len(found) >= 5
    for block in found:
        assert any(block in source for source in sources), f"not in examples/airflow/: {block[:200]}"
    for step in parse_guide(GUIDE):
        if step.lang == "python":
            assert step.skip and "excerpt" in step.skip, f"line {step.line}: a Python block that is not an excerpt"


def test_the_only_skipped_command_is_the_install_that_make_airflow_venv_runs() -> None:
    skipped = [step for step in parse_guide(GUIDE) if step.skip and step.lang != "python"]
    assert len(skipped) == 1, [step.source for step in skipped]
    install = skipped[0].source
    packages = '"apache-airflow[postgres]==3.3.2" "$ASSETBUS_CHECKOUT/schemas" "$ASSETBUS_CHECKOUT/producers[airflow]"'
    assert packages in install
    makefile = (REPO / "Makefile").read_text()
    assert "AIRFLOW_VERSION ?= 3.3.2" in makefile
    # the same two directories, built as wheels (what pip does with a directory) and installed from them
    assert "pip wheel -q --no-deps --disable-pip-version-check -w $(DIST) ./schemas ./producers" in makefile
    assert ('"apache-airflow[postgres]==$(AIRFLOW_VERSION)" \\\n\t  assetbus_schemas-*.whl '
            '"$$(ls assetbus_sdk-*.whl)[airflow]"') in makefile
    assert " -e ./producers" not in makefile.split("$(AIRFLOW_STAMP):", 1)[1].split("\n\n", 1)[0]
    hidden = [step for step in parse_guide(GUIDE) if step.hidden]
    assert [step.source.strip() for step in hidden] == ['ln -s "$DOCS_AIRFLOW_VENV" airflow-venv']


def test_no_install_from_an_index_that_does_not_have_the_sdk() -> None:
    assert "pip install 'assetbus-sdk" not in GUIDE.read_text()
    assert 'pip install "assetbus-sdk' not in GUIDE.read_text()


def _declared_consumers() -> dict[str, set[str]]:
    """Example DAG file → the assets it waits for, for each example declared once (tag `assetbus`)."""
    found = {}
    for path in sorted(EXAMPLE_DAGS.glob("*.py")):
        source = path.read_text()
        if "PartitionedAssetTimetable(" in source and re.search(r'tags=\["assetbus"', source):
            found[path.name] = set(re.findall(r'Asset\("([^"]+)"', source))
    return found


def test_every_consumer_example_has_a_producer_example_and_the_walk_through_runs_both() -> None:
    consumers = _declared_consumers()
    assert set(consumers) == {"orders_by_partition.py", "daily_clicks_report.py"}
    copied = next(line for step in parse_guide(GUIDE) if step.runs for line in step.source.splitlines()
                  if "examples/airflow/dags/" in line and line.startswith("cp "))
    names = set(re.search(r"\{([^}]*)\}", copied)[1].split(","))  # type: ignore[index]
    producers = {path.name: path.read_text() for path in EXAMPLE_DAGS.glob("*.py") if path.name not in consumers}
    for consumer, assets in consumers.items():
        assert consumer.removesuffix(".py") in names, f"the walk-through does not deploy {consumer}"
        for asset in assets:
            making = [name for name, source in producers.items() if f'Asset("{asset}"' in source
                      and "outlets=[" in source and "emit(" in source]
            assert making, f"no example DAG produces {asset}, which {consumer} waits for"
            assert any(name.removesuffix(".py") in names for name in making), \
                f"the walk-through deploys no producer of {asset}"


def test_no_second_file_of_consumer_definitions() -> None:
    assert not (REPO / "examples" / "airflow" / "consumers.py").exists()
    assert "ConsumerDag(" not in GUIDE.read_text()
    for path in EXAMPLES:
        assert "assetbus.consumers" not in path.read_text(), f"{path.name} imports the server package"


def test_the_test_stack_reads_rules_from_airflow_and_bridges_without_dag() -> None:
    stack = (REPO / "src" / "assetbus" / "infra" / "airflow_stack.py").read_text()
    assert '"airflow", "sync", "--metadata-url", self.metadata_url' in stack
    conftest = (REPO / "tests" / "integration" / "airflow" / "stack.py").read_text()  # the Airflow stack's fixtures
    assert "consumer_definitions" not in conftest
    support = (REPO / "tests" / "integration" / "airflow" / "support.py").read_text()
    assert 'return ("airflow-bridge", "--airflow-metadata-url", stack.metadata_url, *more)' in support
    bridge_test = (REPO / "tests" / "integration" / "airflow" / "test_consumer_dags.py").read_text()
    assert '*bridge_args(airflow_stack, "--poll-interval-s", "1", "--metrics-port", str(port))' in bridge_test


def test_every_airflow_cfg_line_is_what_the_airflow_stack_configures() -> None:
    from assetbus.infra.airflow_stack import STATE_STORE_BACKEND

    found = blocks("ini")
    assert found == [f"[state_store]\nbackend = {STATE_STORE_BACKEND}\n"]
    stack = (REPO / "src" / "assetbus" / "infra" / "airflow_stack.py").read_text()
    assert '"AIRFLOW__STATE_STORE__BACKEND": STATE_STORE_BACKEND' in stack


def test_only_bash_console_python_and_airflow_cfg_blocks() -> None:
    fences = re.findall(r"^```(\w*)", GUIDE.read_text(), flags=re.M)
    assert set(fences[::2]) <= {"bash", "python", "console", "ini"}, fences
