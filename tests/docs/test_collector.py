"""The doc-test collector itself: how guides are read and how outputs are compared (no infrastructure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.guide import GuideError, check_something_runs, parse_text
from tests.docs.matching import matches
from tests.docs.runner import run_guide
from tests.docs.shell import Shell
from tests.docs.warm_cli import WarmCli

FENCE = "```"


def md(text: str) -> str:
    return text.replace("'''", FENCE)


def test_console_block_splits_into_commands_with_their_outputs() -> None:
    [step] = parse_text(md("'''console\n$ echo a \\\n  b\na b\n$ true\n'''\n"))
    first, second = step.commands()
    assert (first.source, first.expected) == ("echo a \\\n  b", "a b")
    assert (second.source, second.expected) == ("true", None)  # no output shown: not checked


def test_output_block_belongs_to_the_block_right_before_it() -> None:
    [step] = parse_text(md("'''python\nprint(1)\n'''\n\n'''output\n1\n'''\n"))
    assert step.expected == "1\n"


def test_output_block_after_prose_is_an_error() -> None:
    with pytest.raises(GuideError, match="must follow"):
        parse_text(md("'''bash\necho 1\n'''\n\nsome prose\n\n'''output\n1\n'''\n"))


def test_text_blocks_are_not_steps_and_files_are_saved_not_run() -> None:
    steps = parse_text(md("'''text\ndiagram\n'''\n\n'''python file=job.py\nx = 1\n'''\n"))
    assert [(s.lang, s.file) for s in steps] == [("python", "job.py")]


def test_skip_needs_a_reason() -> None:
    with pytest.raises(GuideError, match="needs a reason"):
        parse_text(md("<!-- docs-test: skip -->\n'''bash\necho\n'''\n"))
    [step] = parse_text(md("<!-- docs-test: skip needs a GPU -->\n'''bash\necho\n'''\n"))
    assert step.skip == "needs a GPU"


def test_ci_entrypoint_is_only_for_make_demo_and_make_test() -> None:
    [step] = parse_text(md("<!-- docs-test: ci-entrypoint -->\n'''bash\nmake demo   # all\nmake test\n'''\n"))
    assert step.exempt == "ci-entrypoint"
    with pytest.raises(GuideError, match="only for"):
        parse_text(md("<!-- docs-test: ci-entrypoint -->\n'''bash\nmake demo\nrm -rf /\n'''\n"))


def test_hidden_setup_steps_run_in_order() -> None:
    text = md("'''bash\necho 1\n'''\n\n<!-- docs-test: setup\n'''bash\necho 2\n'''\n-->\n\n'''bash\necho 3\n'''\n")
    assert [(s.source.strip(), s.hidden) for s in parse_text(text)] == [("echo 1", False), ("echo 2", True),
                                                                         ("echo 3", False)]


ALL_SKIPPED = "<!-- docs-test: skip needs Airflow -->\n```bash\nairflow version\n```\n"


def test_a_guide_whose_every_block_is_skipped_fails_unless_it_says_why() -> None:
    with pytest.raises(GuideError, match="every runnable block is skipped"):
        check_something_runs(ALL_SKIPPED, parse_text(ALL_SKIPPED))
    waived = "<!-- docs-test: runs-elsewhere tests/integration/airflow runs each excerpt -->\n\n" + ALL_SKIPPED
    check_something_runs(waived, parse_text(waived))
    unexplained = "<!-- docs-test: runs-elsewhere -->\n\n" + ALL_SKIPPED
    with pytest.raises(GuideError, match="needs a reason"):
        check_something_runs(unexplained, parse_text(unexplained))
    one_runs = ALL_SKIPPED + "\n```bash\necho hi\n```\n"
    check_something_runs(one_runs, parse_text(one_runs))


def test_unknown_directive_is_an_error() -> None:
    with pytest.raises(GuideError, match="unknown directive"):
        parse_text(md("<!-- docs-test: skipp reason -->\n'''bash\necho\n'''\n"))


@pytest.mark.parametrize(("expected", "actual", "ok"), [
    ("accepted event 1", "accepted event 1\n", True),
    ("accepted event 1", "accepted event 2", False),
    ("event ... at ...", "event 17 at 2026-10-01T00:00Z", True),
    ("│ ...      │ W40 │", "│ 7bcac11f │ W40 │", True),
    ("first\n...\nlast", "first\na\nb\nlast", True),
    ("first\n...\nlast", "first\nlast", True),
    ("first\nlast", "first\nmiddle\nlast", False),
    ("", "", True),
    ("", "unexpected", False),
    ("trailing   \n\n", "\ntrailing", True),
])
def test_output_matching(expected: str, actual: str, ok: bool) -> None:
    assert matches(expected, actual) is ok


def test_shell_keeps_state_between_steps_and_reports_every_failing_command(tmp_path: Path) -> None:
    with Shell(tmp_path, {"PATH": os.environ["PATH"]}) as shell:
        assert shell.run("export GREETING=hello\ncd /").status == 0
        outcome = shell.run("false\necho $GREETING from $PWD")
    assert outcome.output.strip() == "hello from /"
    assert outcome.status == 0 and outcome.failures == ["1 false"]


def test_a_guide_stops_at_its_first_wrong_output_and_names_the_line(tmp_path: Path) -> None:
    text = md("'''console\n$ echo one\none\n'''\n\n'''console\n$ echo two\nthree\n'''\n\n'''bash\ntouch never\n'''\n")
    with Shell(tmp_path, {"PATH": os.environ["PATH"]}) as shell:
        report = run_guide("guide.md", parse_text(text), shell)
    [failure] = report.failures
    assert failure.startswith("7: console step")  # the line of `$ echo two` and "output differs" in failure
    assert not (tmp_path / "never").exists()


def test_python_blocks_run_as_scripts_in_the_guides_directory(tmp_path: Path) -> None:
    text = md("'''python file=helper.py\nVALUE = 41\n'''\n\n'''python\nfrom helper import VALUE\n"
              "print(VALUE + 1)\n'''\n\n'''output\n42\n'''\n")
    with Shell(tmp_path, {"PATH": os.environ["PATH"]}) as shell:
        report = run_guide("guide.md", parse_text(text), shell)
    assert report.failures == []
    assert (tmp_path / "helper.py").read_text() == "VALUE = 41\n"


def test_a_block_can_say_it_must_fail_with_an_exit_code(tmp_path: Path) -> None:
    ok = md("'''bash\n# exit code: 3\necho trying\n(exit 3)\n'''\n")
    wrong = md("'''bash\n# exit code: 3\n(exit 4)\n'''\n")
    with Shell(tmp_path, {"PATH": os.environ["PATH"]}) as shell:
        assert run_guide("ok.md", parse_text(ok), shell).failures == []
        [failure] = run_guide("wrong.md", parse_text(wrong), shell).failures
    assert "exit status 4, the guide says 3" in failure


def test_the_warm_cli_gets_the_arguments_environment_and_exit_code(warm_cli: WarmCli | None, tmp_path: Path) -> None:
    if warm_cli is None:
        pytest.skip("ASSETBUS_DOCS_COLD_CLI is set: the guides use the real console script")
    env = {"PATH": os.environ["PATH"], "ASSETBUS_TOKEN_SECRET": "docs-test-" + "k" * 40,
           "ASSETBUS_TOPIC_PREFIX": "warm"}
    with Shell(tmp_path, env, prelude=warm_cli.alias()) as shell:
        refused = shell.run('assetbus token issue --dag d --run r --ttl 0 || echo "exit status $?"')
        lines = shell.run("assetbus token issue --dag d --run r --format env | grep -c '^export '")
        prefix = shell.run("cd / && assetbus token issue --dag d --run r --format env | grep PREFIX")
    assert "--ttl must be a positive number" in refused.output and "exit status 1" in refused.output
    assert lines.output.strip() == "3"
    assert prefix.output.strip() == "export ASSETBUS_TOPIC_PREFIX=warm"
