"""One bash session per guide: every step runs in it, so `export`, `cd`, `source` and `&` carry over.

Each step is written to a file and `source`d with stdin from /dev/null; stdout and stderr are read
together (as a reader's terminal shows them) up to a sentinel line carrying the exit status. An ERR
trap reports every failing command of a step, not only its last one.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ERR_MARK = "__docs_err__"


@dataclass
class Outcome:
    output: str
    status: int
    failures: list[str]
    seconds: float


class StepTimeout(Exception):
    """A step did not finish in time; `output` is what it printed so far."""

    def __init__(self, seconds: float, output: str) -> None:
        super().__init__(f"step still running after {seconds:.0f}s")
        self.output = output


class Shell:
    """`with Shell(cwd, env, prelude) as shell: shell.run(script)`; background jobs are stopped on exit."""

    def __init__(self, cwd: Path, env: dict[str, str], prelude: str = "") -> None:
        self.cwd = cwd
        self.env = env
        self.prelude = prelude
        self.blocks = cwd / ".docs-test"
        self.sentinel = f"__docs_done_{uuid.uuid4().hex}__"
        self.process: subprocess.Popen[bytes] | None = None
        self._count = 0

    def __enter__(self) -> Shell:
        self.blocks.mkdir(exist_ok=True)
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=self.cwd, env=self.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        trap = (f"set -o errtrace\ntrap 'echo \"{ERR_MARK} $? $BASH_COMMAND\"' ERR\n")
        outcome = self.run(self.prelude + trap, timeout_s=30)
        if outcome.status != 0:
            raise RuntimeError(f"shell prelude failed: {outcome.output}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, script: str, timeout_s: float = 120.0) -> Outcome:
        assert self.process is not None and self.process.stdin is not None
        self._count += 1
        path = self.blocks / f"step-{self._count:03d}.sh"
        path.write_text(script if script.endswith("\n") else script + "\n")
        started = time.monotonic()
        self.process.stdin.write(f"source {path} < /dev/null\nprintf '\\n{self.sentinel} %s\\n' $?\n".encode())
        self.process.stdin.flush()
        raw = self._read_until_sentinel(timeout_s)
        text, _, tail = raw.rpartition(f"\n{self.sentinel} ")
        lines = text.split("\n")
        failures = [line.removeprefix(ERR_MARK).strip() for line in lines if line.startswith(ERR_MARK)]
        output = "\n".join(line for line in lines if not line.startswith(ERR_MARK))
        return Outcome(output, int(tail.strip() or 1), failures, time.monotonic() - started)

    def _read_until_sentinel(self, timeout_s: float) -> str:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks: list[bytes] = []
        marker = f"\n{self.sentinel} ".encode()
        deadline = time.monotonic() + timeout_s
        while True:
            data = b"".join(chunks)
            at = data.rfind(marker)
            if at >= 0 and data.endswith(b"\n") and data.find(b"\n", at + 1) == len(data) - 1:
                return data.decode(errors="replace")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._interrupt()
                raise StepTimeout(timeout_s, data.decode(errors="replace"))
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"the guide's shell exited: {data.decode(errors='replace')[-2000:]}")
                chunks.append(chunk)

    def _interrupt(self) -> None:
        """After a timeout the session is useless: stop it and everything it started."""
        self.stop()

    def stop(self) -> None:
        """SIGTERM to the session's process group (background services stop gracefully), then SIGKILL."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.process.poll()  # reap bash itself, so only live members keep the group alive
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


__all__ = ["Outcome", "Shell", "StepTimeout"]
