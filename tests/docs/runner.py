"""Run a guide's steps in order in one shell session and collect what went wrong, step by step."""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.guide import Command, Step
from tests.docs.matching import explain, matches
from tests.docs.shell import Shell, StepTimeout

DEFAULT_TIMEOUT_S = 120.0


@dataclass
class Report:
    """What a guide run did: failures (with the guide's line numbers), skips with their reasons, timings."""

    guide: str
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    timings: list[tuple[int, float]] = field(default_factory=list)

    def summary(self) -> str:
        return "\n\n".join(f"{self.guide}:{failure}" for failure in self.failures)

    def announce(self, slowest: int = 5) -> None:
        """Print the time in steps and the slowest steps; warn of each skipped block (a warning to read, not
        a failure: pyproject.toml's filterwarnings)."""
        top = sorted(self.timings, key=lambda t: -t[1])[:slowest]
        print(f"{self.guide}: {sum(t for _, t in self.timings):.1f}s in steps; slowest (line, s): "
              + ", ".join(f"{line}: {seconds:.1f}" for line, seconds in top))
        for skipped in self.skipped:
            warnings.warn(f"{self.guide}: not run: {skipped}", stacklevel=2)


def _script(step: Step, command: Command, blocks: Path, index: int) -> str:
    if step.lang != "python":
        return command.source
    path = blocks / f"step-{index:03d}.py"
    path.write_text(command.source)
    return f'"{sys.executable}" - < {path}'  # stdin as the script: the working directory is on sys.path


def run_guide(guide: str, steps: list[Step], shell: Shell) -> Report:
    """Run every step; stop at the first failing one (the later ones depend on it)."""
    report = Report(guide)
    for index, step in enumerate(steps, 1):
        if step.skip or step.exempt:
            report.skipped.append(f"line {step.line}: {step.skip or step.exempt}")
            continue
        if step.file:
            (shell.cwd / step.file).write_text(step.source)
            continue
        timeout = float(step.attrs.get("timeout") or DEFAULT_TIMEOUT_S)
        for command in step.commands():
            try:
                outcome = shell.run(_script(step, command, shell.blocks, index), timeout_s=timeout)
            except StepTimeout as error:
                report.failures.append(f"{command.line}: {error}\n$ {command.source}\n{error.output}")
                return report
            report.timings.append((command.line, outcome.seconds))
            if os.environ.get("ASSETBUS_DOCS_SHOW"):  # for guide authors: what each step printed
                print(f"\n--- {guide}:{command.line} ({outcome.seconds:.1f}s)\n{command.source}\n{outcome.output}")
            if command.exit_status:  # a block meant to fail: only how it ends counts
                problems = [] if outcome.status == command.exit_status else \
                    [f"exit status {outcome.status}, the guide says {command.exit_status}"]
            else:
                problems = [f"failed: {failure}" for failure in outcome.failures]
                if outcome.status != 0 and not problems:
                    problems.append(f"exit status {outcome.status}")
            if command.expected is not None and not matches(command.expected, outcome.output):
                problems.append("output differs\n" + explain(command.expected, outcome.output))
            if problems:
                shown = "\n".join(problems)
                report.failures.append(f"{command.line}: {step.lang} step\n{command.source.rstrip()}\n{shown}\n"
                                       f"--- its full output\n{outcome.output}")
                return report
    return report


__all__ = ["Report", "run_guide"]
