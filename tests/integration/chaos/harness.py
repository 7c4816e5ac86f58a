"""One chaos harness for the consumer kinds: work flows, the consumer process is killed -9 at random points,
restarted, and its effects are counted against the promise written down for its kind.

A kind says how to offer its work, how to start the process that consumes it (an `assetbus run ...` service, a
downstream script, Airflow's triggerer), how to count its effects (`seen`: every effect, repeats included;
`distinct`: by the kind's identity) and what it promises:

- `exactly once`: when the work is done, `seen == distinct == wanted`;
- `at least once`, deduped by a stated key: `distinct == wanted <= seen`.

The kill points are drawn from a seeded generator (`ASSETBUS_CHAOS_SEED`, printed with the figures), as a
share of the work done, so a failure can be replayed with the same points.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tests.helpers import wait_for

ASSETBUS = str(Path(sys.executable).parent / "assetbus")
EXACTLY_ONCE = "exactly once"


def at_least_once(dedupe: str) -> str:
    """The promise of a kind whose effect may repeat after a kill, and that carries `dedupe` to drop the repeat."""
    return f"at least once (deduped by {dedupe})"


@dataclass(frozen=True)
class Effects:
    seen: int
    """Every effect counted, repeats included."""
    distinct: int
    """Effects by the kind's identity (an event per dedupe key, a run per partition)."""


class Consumer(Protocol):
    """One started process of a kind."""

    async def kill(self) -> None:
        """kill -9, and wait until it is gone."""

    async def stop(self) -> int:
        """Stop it as an operator would (SIGTERM) once the work is done; its exit code."""


Start = Callable[[Path, int], Awaitable[Consumer]]
"""Starts the `n`th process of a kind (0 first), its log in the folder given."""


@dataclass
class Kind:
    """A consumer kind under chaos."""

    name: str
    promise: str
    """`exactly once`, or `at least once (deduped by …)`."""
    wanted: int
    start: Start
    offer: Callable[[], Awaitable[None]]
    """Puts every unit of work where the process reads it."""
    effects: Callable[[], Awaitable[Effects]]
    kills: int = 2
    trickle: bool = False
    """`offer` runs beside the processes (it paces the work), not before them: for a consumer that would
    otherwise take all of its work at once, before a kill could land in it."""
    poll_s: float = 0.02
    """How often `effects` is asked while the work flows (an HTTP query of Airflow costs more than a SELECT)."""
    timeout_s: float = 120.0
    settled: Callable[[], Awaitable[None]] | None = None
    """What else holds once the work is done (a subscriber's outcomes in the ledger, say); asserts."""
    tail: int = 0
    """Units of `wanted` that `offer_tail` offers only after the last kill, so that the last process starts into
    work however fast the ones before it went: a consumer that takes its work in large batches can finish all of
    it between reaching its kill point and the kill landing, on a loaded machine."""
    offer_tail: Callable[[], Awaitable[None]] | None = None


@dataclass
class Subprocess:
    """A consumer started by the harness as a child process."""

    process: asyncio.subprocess.Process

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)


def command(name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Start:
    """Start `argv` (with `env` added to this environment), its output in `<log folder>/<name>-<n>.log`."""
    async def start(log_dir: Path, n: int) -> Consumer:
        log = (log_dir / f"{name}-{n}.log").open("wb")
        try:
            return Subprocess(await asyncio.create_subprocess_exec(*argv, env={**os.environ, **(env or {})},
                                                                   stdout=log, stderr=log))
        finally:
            log.close()

    return start


def assetbus(*args: str) -> list[str]:
    """The command line of `assetbus ARGS`, from this test's virtualenv."""
    return [ASSETBUS, *args]


@dataclass
class ChaosReport:
    kind: str
    seed: int
    kills_at: list[int] = field(default_factory=list)
    """`distinct` at each kill -9."""
    effects: Effects | None = None
    seconds: float = 0.0

    def line(self) -> str:
        assert self.effects is not None
        return (f"[chaos] {self.kind}: seed {self.seed}, kill -9 at {self.kills_at} of "
                f"{self.effects.distinct} distinct ({self.effects.seen} seen) in {self.seconds:.1f}s")


def chaos_seed() -> int:
    return int(os.environ.get("ASSETBUS_CHAOS_SEED") or time.time_ns() % 100_000)


def _logs(log_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(log_dir.glob("*.log")))


async def run_chaos(kind: Kind, log_dir: Path, *, kills: int | None = None, seed: int | None = None) -> ChaosReport:
    """Offer the work, kill the consumer -9 `kills` times (the kind's number unless given) at random shares of it
    (each later than the last), let a last process finish, stop it; the report holds the effects at the end."""
    seed = chaos_seed() if seed is None else seed
    rng = random.Random(seed)
    report = ChaosReport(kind.name, seed)
    points = sorted(rng.uniform(0.05, 0.85) for _ in range(kind.kills if kills is None else kills))
    started = time.monotonic()
    offering = asyncio.ensure_future(kind.offer())
    try:
        if not kind.trickle:
            await offering
        code = await _kill_and_finish(kind, log_dir, points, report)
        await offering  # its failure, if it failed
    finally:
        offering.cancel()
    assert code == 0, f"{kind.name} did not stop cleanly after the chaos: exit {code}\n{_logs(log_dir)}"
    report.effects = await kind.effects()
    report.seconds = time.monotonic() - started
    return report


async def _kill_and_finish(kind: Kind, log_dir: Path, points: list[float], report: ChaosReport) -> int:
    """Start a process per kill point, kill it -9 there; let a last one finish the work and stop it: its exit code."""
    for n, share in enumerate(points):
        process = await kind.start(log_dir, n)
        # each process does some work before its kill (a kill point the last one overshot moves past it)
        target = min(kind.wanted - kind.tail - 1, max(int(kind.wanted * share), (await kind.effects()).distinct + 1))

        async def reached(at: int = target) -> bool:
            return (await kind.effects()).distinct >= at

        try:
            await wait_for(reached, timeout_s=kind.timeout_s, interval=kind.poll_s,
                           what=f"{kind.name} to reach {target} of {kind.wanted} (logs: {log_dir})")
        finally:
            await process.kill()
        report.kills_at.append((await kind.effects()).distinct)
    if kind.offer_tail is not None:
        await kind.offer_tail()
    left = kind.wanted - (await kind.effects()).distinct
    assert left > 0, (f"{kind.name}: the work was done before the last process started, so its restart is not "
                      f"under test (offer more work, or trickle it over longer than a process's start): {report}")
    last = await kind.start(log_dir, len(points))
    try:
        async def done() -> bool:
            return (await kind.effects()).distinct >= kind.wanted

        await wait_for(done, timeout_s=kind.timeout_s, interval=max(kind.poll_s, 0.1),
                       what=f"{kind.name} to finish ({_logs(log_dir)})")
    finally:
        code = await last.stop()
    return code


async def assert_promise(kind: Kind, report: ChaosReport) -> None:
    """The kind's effects, counted after the chaos, are what its promise says (and what it settles holds)."""
    print(report.line())
    assert report.effects is not None
    assert report.kills_at and report.kills_at[0] < kind.wanted, f"the first kill must land mid-work: {report.line()}"
    if kind.promise == EXACTLY_ONCE:
        assert (report.effects.seen, report.effects.distinct) == (kind.wanted, kind.wanted), report.line()
    else:
        assert report.effects.distinct == kind.wanted <= report.effects.seen, report.line()
    if kind.settled is not None:
        await kind.settled()
