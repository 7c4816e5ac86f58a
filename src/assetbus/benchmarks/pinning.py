"""Pinning processes to CPUs for a benchmark: what a machine with more cores would show, measured on this one.

`bench scale --schedulers 1,2 --pin-schedulers 1 --pin-infra 0` runs the scheduler processes on CPU 1 alone,
and Kafka, PostgreSQL and the benchmark's own process (its load generator and signal counter) on CPU 0
alone, so each side's CPU per event is measured without the other's run queue in it. Every thread of a
process is pinned (`sched_setaffinity` per task id: a JVM's threads do not inherit a later change of its
first thread), and new PostgreSQL backends inherit the postmaster's mask. `pinned_infra` restores every
mask it changed to all CPUs when the run ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import psutil

from assetbus.benchmarks.processes import infra_role


def parse_cpus(text: str) -> frozenset[int]:
    """`"0"`, `"0,1"` or `"2-3"` as a set of CPU numbers that this machine has."""
    cpus: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        low, _, high = part.partition("-")
        try:
            cpus.update(range(int(low), int(high or low) + 1))
        except ValueError:
            raise ValueError(f"CPUs {text!r}: write them as 1, 0,1 or 2-3") from None
    available = os.sched_getaffinity(0)
    if not cpus or not cpus <= available:
        raise ValueError(f"CPUs {text!r}: this machine offers {sorted(available)}")
    return frozenset(cpus)


def pin(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of process `pid` and of its descendants on `cpus` (those that end meanwhile are skipped)."""
    try:
        children = [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for tid in (t for p in (pid, *children) for t in _threads(p)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.sched_setaffinity(tid, cpus)


def infra_pids() -> list[int]:
    """The local Kafka broker(s) and PostgreSQL server processes on this machine (as `infra_cpu` counts them)."""
    return [proc.pid for proc in psutil.process_iter(["name", "cmdline"]) if infra_role(proc.info) is not None]


@contextlib.contextmanager
def pinned_infra(cpus: frozenset[int] | None) -> Iterator[None]:
    """Kafka, PostgreSQL and this process on `cpus` while the block runs (nothing when `cpus` is None)."""
    if cpus is None:
        yield
        return
    pids = [*infra_pids(), os.getpid()]
    everything = frozenset(os.sched_getaffinity(0))
    try:
        for pid in pids:
            pin(pid, cpus)
        yield
    finally:
        for pid in [*infra_pids(), os.getpid()]:
            pin(pid, everything)


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []
