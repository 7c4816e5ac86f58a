"""Compare what a step printed with what its guide shows, doctest-style.

- `...` inside a line matches any text on that line (ids, times, paths), the spaces around it
  included, so a masked table cell can keep the width it has in the guide;
- a line that is only `...` matches any number of lines, none included;
- trailing spaces and leading/trailing blank lines are ignored on both sides.
"""

from __future__ import annotations

import re

ELLIPSIS = "..."
ANY_LINES = r"(?:[^\n]*\n)*?"


def normalize(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "".join(line + "\n" for line in lines)


def pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in normalize(expected).splitlines():
        if line.strip() == ELLIPSIS:
            parts.append(ANY_LINES)
        else:
            pieces = line.split(ELLIPSIS)
            pieces = [p.lstrip(" ") if i else p for i, p in enumerate(pieces)]
            pieces = [p.rstrip(" ") if i < len(pieces) - 1 else p for i, p in enumerate(pieces)]
            parts.append(".*?".join(re.escape(piece) for piece in pieces) + r"\n")
    return re.compile("".join(parts))


def matches(expected: str, actual: str) -> bool:
    return pattern(expected).fullmatch(normalize(actual)) is not None


def explain(expected: str, actual: str) -> str:
    """A short report for a mismatch: both texts, and the first expected line that was not found."""
    return f"--- shown in the guide\n{normalize(expected)}--- printed\n{normalize(actual)}---"


__all__ = ["explain", "matches", "normalize"]
