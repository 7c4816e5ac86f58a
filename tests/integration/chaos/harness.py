"""One chaos harness for the consumer kinds: work flows, the consumer process is killed -9 at random points,
restarted, and its effects are counted against the promise written down for its kind.

A kind says how to offer its work, which `assetbus run ...` process consumes it, how to count its effects
(`seen`: every effect, repeats included; `distinct`: by the kind's identity) and what it promises:

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import wait_for

ASSETBUS = str(Path(sys.executable).parent / "assetbus")


@dataclass(frozen=True)
class Effects:
    seen: int
    """Every effect counted, repeats included."""
    distinct: int
    """Effects by the kind's identity (an event per dedupe key, a run per partition)."""


@dataclass
class Kind:
    """A consumer kind under chaos."""

    name: str
    promise: str
    """`exactly once`, or `at least once (deduped by …)`."""
    wanted: int
    args: list[str]
    """`assetbus` arguments of the process that consumes the work."""
    env: dict[str, str]
    offer: Callable[[], Awaitable[None]]
    """Puts every unit of work where the process reads it."""
    effects: Callable[[], Awaitable[Effects]]


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


async def _start(kind: Kind, log_dir: Path, n: int) -> asyncio.subprocess.Process:
    log = (log_dir / f"{kind.name}-{n}.log").open("wb")
    try:
        return await asyncio.create_subprocess_exec(ASSETBUS, *kind.args, env={**os.environ, **kind.env},
                                                    stdout=log, stderr=log)
    finally:
        log.close()


def _logs(log_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(log_dir.glob("*.log")))


async def run_chaos(kind: Kind, log_dir: Path, *, kills: int = 2, seed: int | None = None,
                    timeout_s: float = 120.0) -> ChaosReport:
    """Offer the work, kill the consumer -9 `kills` times at random shares of it (each later than the last),
    let a last process finish, stop it with SIGTERM; the report holds the effects counted at the end."""
    seed = chaos_seed() if seed is None else seed
    rng = random.Random(seed)
    report = ChaosReport(kind.name, seed)
    points = sorted(rng.uniform(0.05, 0.85) for _ in range(kills))
    started = time.monotonic()
    await kind.offer()
    for n, share in enumerate(points):
        process = await _start(kind, log_dir, n)
        # each process does some work before its kill (a kill point the last one overshot moves past it)
        target = min(kind.wanted - 1, max(int(kind.wanted * share), (await kind.effects()).distinct + 1))

        async def reached(at: int = target) -> bool:
            return (await kind.effects()).distinct >= at

        try:
            await wait_for(reached, timeout_s=timeout_s, interval=0.02,
                           what=f"{kind.name} to reach {target} of {kind.wanted} (logs: {log_dir})")
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
        report.kills_at.append((await kind.effects()).distinct)
    last = await _start(kind, log_dir, kills)
    try:
        async def done() -> bool:
            return (await kind.effects()).distinct >= kind.wanted

        await wait_for(done, timeout_s=timeout_s, interval=0.1, what=f"{kind.name} to finish ({_logs(log_dir)})")
    finally:
        if last.returncode is None:
            last.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(last.wait(), 30)
    assert code == 0, f"{kind.name} did not stop cleanly after the chaos: exit {code}\n{_logs(log_dir)}"
    report.effects = await kind.effects()
    report.seconds = time.monotonic() - started
    return report
