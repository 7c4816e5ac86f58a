"""Pinning benchmark processes to CPUs: parsing, every thread and child pinned, the masks restored."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from assetbus.benchmarks.scheduler_group import parse_cpus, pin, pinned_infra

CPUS = sorted(os.sched_getaffinity(0))


def test_cpu_lists_and_ranges_are_parsed() -> None:
    assert parse_cpus(str(CPUS[0])) == {CPUS[0]}
    assert parse_cpus(",".join(map(str, CPUS))) == set(CPUS)
    if CPUS == list(range(CPUS[0], CPUS[-1] + 1)):
        assert parse_cpus(f"{CPUS[0]}-{CPUS[-1]}") == set(CPUS)


@pytest.mark.parametrize("text", ["", "999", "0-999", "x"])
def test_cpus_this_machine_does_not_offer_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="CPUs"):
        parse_cpus(text)


def test_every_thread_of_a_process_and_its_children_is_pinned() -> None:
    script = ("import subprocess, sys, threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); "
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        import psutil

        proc = psutil.Process(parent.pid)
        deadline = time.monotonic() + 10
        while len(proc.children()) < 1 or proc.num_threads() < 2:
            assert time.monotonic() < deadline, "the child process and thread did not start"
            time.sleep(0.01)
        pin(parent.pid, frozenset({CPUS[0]}))
        tasks = [int(t) for p in (parent.pid, proc.children()[0].pid) for t in os.listdir(f"/proc/{p}/task")]
        assert len(tasks) >= 3
        assert {frozenset(os.sched_getaffinity(t)) for t in tasks} == {frozenset({CPUS[0]})}
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()


def test_this_process_is_pinned_in_the_block_and_restored_after_it() -> None:
    before = os.sched_getaffinity(0)
    with pinned_infra(frozenset({CPUS[-1]})):
        assert os.sched_getaffinity(0) == {CPUS[-1]}
    assert os.sched_getaffinity(0) == before
    with pinned_infra(None):
        assert os.sched_getaffinity(0) == before
