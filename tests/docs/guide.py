"""A guide (README.md or docs/*.md) read as the list of steps a reader follows, in order.

The markup is described in docs/README.md. In short, a fenced block's info string is
`LANG [ATTR ...]`:

- ``bash``/``sh``: run in the guide's shell; its output is checked only when an ``output`` block
  follows it; a first line ``# exit code: N`` says the block must end with status N;
- ``console``: a transcript; each ``$ command`` runs, and the lines under it (if any) are its
  expected output;
- ``python``: run as a script with the repository's Python, in the guide's shell (so it sees the
  environment and working directory the earlier steps left); ``python file=NAME`` is not run but
  saved as NAME in the working directory, for a later step to run or import;
- ``output``: the expected output of the block just before it;
- anything else (``text``, ``json``, ``toml``, ...): shown, never run.

An HTML comment directly before a block changes it: ``<!-- docs-test: skip REASON -->`` (REASON is
required), ``<!-- docs-test: ci-entrypoint -->`` (only ``make demo``/``make test`` lines: what CI
runs anyway). ``<!-- docs-test: setup`` followed by a fenced block and ``-->`` is a hidden step,
run but not rendered. ``<!-- docs-test: runs-elsewhere REASON -->``, anywhere in a guide, says why a
guide whose every runnable block is skipped is still fine (without it such a guide fails: a guide
that runs nothing proves nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

RUNNABLE = {"bash", "sh", "console", "python"}
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(?P<name>[\w-]+)(?P<rest>.*?)(-->)?\s*$", re.DOTALL)
EXIT_CODE = re.compile(r"^# exit code: (?P<code>\d+)[ \t]*$", re.MULTILINE)
CI_ENTRYPOINT = re.compile(r"^make (demo|test)\s*(#.*)?$")


class GuideError(Exception):
    """The guide's markup is wrong (not a failing step): an orphan output block, a skip without reason, ..."""


@dataclass
class Command:
    """One command of a step, with the output a reader is shown (None: not shown, so not checked)."""

    source: str
    expected: str | None
    line: int

    @property
    def exit_status(self) -> int:
        """0, or N for a block whose first line is `# exit code: N` (it must end with that status)."""
        match = EXIT_CODE.match(self.source)
        return int(match["code"]) if match else 0


@dataclass
class Step:
    """One fenced block a reader acts on."""

    lang: str
    source: str
    line: int
    attrs: dict[str, str] = field(default_factory=dict)
    expected: str | None = None
    hidden: bool = False
    skip: str | None = None
    exempt: str | None = None

    @property
    def runs(self) -> bool:
        """Whether running the guide executes this step (saving a file does not count)."""
        return not (self.skip or self.exempt or self.file)

    @property
    def file(self) -> str | None:
        return self.attrs.get("file")

    def commands(self) -> list[Command]:
        """The commands to run: one per `$` line of a console block, else the block as a whole."""
        if self.lang != "console":
            return [Command(self.source, self.expected, self.line)]
        commands: list[Command] = []
        lines = self.source.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                raise GuideError(f"line {self.line + 1 + i}: console output before any `$ ` command")
            start, parts = i, [lines[i][2:]]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
            i += 1
            output: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            shown = "\n".join(output) if any(line.strip() for line in output) else None  # none shown: unchecked
            commands.append(Command("\n".join(parts), shown, self.line + 1 + start))
        return commands


def _attrs(info: str) -> tuple[str, dict[str, str]]:
    lang, *words = info.split()
    attrs = {}
    for word in words:
        name, _, value = word.partition("=")
        attrs[name] = value
    return lang.lower(), attrs


def _apply(directive: re.Match[str], step: Step, where: int) -> None:
    name, rest = directive["name"], directive["rest"].strip()
    if name == "skip":
        if not rest:
            raise GuideError(f"line {where}: `docs-test: skip` needs a reason")
        step.skip = rest
    elif name == "ci-entrypoint":
        lines = [line for line in step.source.splitlines() if line.strip()]
        if not lines or not all(CI_ENTRYPOINT.match(line.strip()) for line in lines):
            raise GuideError(f"line {where}: `docs-test: ci-entrypoint` is only for `make demo`/`make test` lines")
        step.exempt = "ci-entrypoint"
    else:
        raise GuideError(f"line {where}: unknown directive `docs-test: {name}`")


def _hidden_steps(token: Token, parser: MarkdownIt) -> list[Step]:
    body = token.content.strip().removeprefix("<!--").removesuffix("-->")
    body = body.split("\n", 1)[1] if "\n" in body else ""
    line = (token.map or [0])[0] + 1
    steps = parse_text(body, parser, first_line=line + 1)
    for step in steps:
        step.hidden = True
    return steps


def parse_text(text: str, parser: MarkdownIt | None = None, *, first_line: int = 0) -> list[Step]:
    """The steps of a markdown text, in reading order (hidden setup steps included)."""
    parser = parser or MarkdownIt("commonmark")
    steps: list[Step] = []
    pending: tuple[re.Match[str], int] | None = None
    previous: Step | None = None  # the step an `output` block may belong to
    for token in parser.parse(text):
        line = (token.map or [0])[0] + 1 + first_line
        if token.type == "html_block":
            directive = DIRECTIVE.match(token.content.strip())
            if directive and directive["name"] == "setup":
                steps.extend(_hidden_steps(token, parser))
                previous = None
            elif directive and directive["name"] == "runs-elsewhere":
                pass  # about the whole guide: read by `runs_elsewhere`
            elif directive:
                pending = (directive, line)
            previous = None
            continue
        if token.type != "fence":
            previous = None  # an `output` block belongs to the block right before it, nothing between
            continue
        lang, attrs = _attrs(token.info) if token.info.strip() else ("", {})
        if lang == "output":
            if previous is None or previous.lang not in {"bash", "sh", "python"} or previous.expected is not None:
                raise GuideError(f"line {line}: an `output` block must follow a bash/sh/python block")
            previous.expected = token.content
            continue
        step = Step(lang=lang, source=token.content, line=line, attrs=attrs)
        if pending is not None:
            _apply(pending[0], step, pending[1])
            pending = None
        if lang in RUNNABLE:
            steps.append(step)
            previous = step
        else:
            previous = None
    return steps


def parse_guide(path: Path) -> list[Step]:
    return parse_text(path.read_text(encoding="utf-8"))


RUNS_ELSEWHERE = re.compile(r"<!--\s*docs-test:\s*runs-elsewhere(?P<reason>.*?)-->", re.DOTALL)


def runs_elsewhere(text: str) -> str | None:
    """The reason a guide gives for running none of its blocks itself, if it gives one."""
    match = RUNS_ELSEWHERE.search(text)
    if match is None:
        return None
    if not match["reason"].strip():
        raise GuideError("`docs-test: runs-elsewhere` needs a reason")
    return match["reason"].strip()


def check_something_runs(text: str, steps: list[Step]) -> None:
    """Refuse a guide with runnable blocks that are all skipped, unless it says why (`runs-elsewhere`)."""
    if any(step.runs for step in steps) or not any(step.skip for step in steps):
        return
    if runs_elsewhere(text) is None:
        raise GuideError(f"every runnable block is skipped ({sum(1 for s in steps if s.skip)}): run one, or say "
                         "why with `<!-- docs-test: runs-elsewhere REASON -->`")


__all__ = ["Command", "GuideError", "Step", "check_something_runs", "parse_guide", "parse_text", "runs_elsewhere"]
