"""A warning said again and again is printed once, then once per interval with how many were not, and counted."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from assetbus.consumers.observe.logs import RepeatLimiter
from assetbus.consumers.observe.process_metrics import register_process_metrics


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(template: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, template, args, None)


def test_a_repeated_error_is_said_once_per_interval_with_the_count_of_those_not_said() -> None:
    clock = Clock()
    limiter = RepeatLimiter(clock=clock)
    said = []
    for i in range(250):  # 250 failed connections in 25 s, to three nodes
        clock.now = i / 10
        line = record("Unable connect to node with id %s: %s", i % 3 + 1, "Connection refused")
        if limiter.filter(line):
            said.append((clock.now, getattr(line, "suppressed", 0)))
    assert said == [(0.0, 0), (10.0, 99), (20.0, 99)]
    assert limiter.suppressed == {("aiokafka", "ERROR"): 250 - 3}


def test_other_templates_levels_and_info_lines_are_not_held_back() -> None:
    limiter = RepeatLimiter(clock=Clock())
    assert limiter.filter(record("Unable connect to node with id %s: %s", 1, "refused"))
    assert limiter.filter(record("Failed fetch messages from %s: %s", 1, "closed"))  # another template
    assert limiter.filter(record("Unable connect to node with id %s: %s", 1, "refused", level=logging.WARNING))
    assert limiter.filter(record("Unable connect to node with id %s: %s", 1, "refused", name="uvicorn.error"))
    assert all(limiter.filter(record("dead letter", level=logging.WARNING, name="assetbus.persister"))
               for _ in range(50))  # the service's own lines are one per event: never held back
    assert all(limiter.filter(record("stored %s events", n, level=logging.INFO)) for n in range(50))
    assert not limiter.filter(record("Unable connect to node with id %s: %s", 2, "refused"))


def test_the_suppressed_lines_are_a_counter_on_the_registry_once() -> None:
    limiter = RepeatLimiter(clock=Clock())
    for _ in range(5):
        limiter.filter(record("Unable to update metadata from %s", [1, 2, 3]))
    registry = CollectorRegistry()
    register_process_metrics(registry, limiter=limiter)
    register_process_metrics(registry, limiter=limiter)  # a second registration is a no-op, not a duplicate error
    assert registry.get_sample_value("assetbus_log_lines_suppressed_total",
                                     {"logger": "aiokafka", "level": "ERROR"}) == 4
