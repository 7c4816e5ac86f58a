"""`python -m assetbus.healthcheck`: the image's HEALTHCHECK, for whichever role its container runs.

It reads the container's command (PID 1's command line) and asks that role's `/readyz` on 127.0.0.1, on
the port `PORT_SETTINGS` names. A one-shot command (migrate, a CLI call) and a service started without a
probe port have nothing to ask: they count as healthy, and say so. Only the standard library: it runs
every few seconds.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PORT_SETTINGS", "Target", "check", "main", "target"]

DEFAULT_API_PORT = 8321
PORT_SETTINGS: dict[str, tuple[str, str]] = {
    "persister": ("--metrics-port", "ASSETBUS_PERSISTER_METRICS_PORT"),
    "scheduler": ("--metrics-port", "ASSETBUS_SCHEDULER_METRICS_PORT"),
    "api": ("--port", "ASSETBUS_API_PORT"),
    "airflow-bridge": ("--metrics-port", "ASSETBUS_BRIDGE_METRICS_PORT"),
    "airflow-forwarder": ("--metrics-port", "ASSETBUS_FORWARDER_METRICS_PORT"),
}
"""`assetbus run` service → (the option, the variable) that opens its probe port."""


@dataclass(frozen=True)
class Target:
    """What to ask: a role's readiness URL, or None with the reason there is nothing to ask."""

    role: str
    url: str | None
    reason: str = ""


def _option(argv: Sequence[str], option: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def target(argv: Sequence[str], environ: Mapping[str, str]) -> Target:
    """The readiness URL of the role that `argv` (a container's command) runs, with its environment."""
    args = list(argv)
    if "run" not in args or args.index("run") + 1 >= len(args):
        return Target(" ".join(os.path.basename(a) for a in args[:3]) or "?", None,
                      "not a service (a one-shot command): nothing to probe")
    role = args[args.index("run") + 1]
    if role not in PORT_SETTINGS:
        return Target(role, None, f"`assetbus run {role}` serves no probes")
    option, variable = PORT_SETTINGS[role]
    port = _option(args, option) or environ.get(variable) or (str(DEFAULT_API_PORT) if role == "api" else None)
    if not port or port == "0":
        return Target(role, None, f"no probe port ({option} or {variable}): nothing to probe")
    return Target(role, f"http://127.0.0.1:{int(port)}/readyz")


def check(found: Target, timeout_s: float = 3.0) -> tuple[bool, str]:
    """(healthy, what was seen)."""
    if found.url is None:
        return True, f"{found.role}: {found.reason}"
    try:
        with urllib.request.urlopen(found.url, timeout=timeout_s) as answer:
            return True, f"{found.role}: {found.url} answered {answer.status}"
    except urllib.error.HTTPError as error:
        return False, f"{found.role}: {found.url} answered {error.code}: {error.read(500).decode(errors='replace')}"
    except OSError as error:
        return False, f"{found.role}: {found.url} did not answer: {error}"


def container_command(proc: Path = Path("/proc/1/cmdline")) -> list[str]:
    return [part for part in proc.read_bytes().decode(errors="replace").split("\0") if part]


def main() -> int:
    healthy, seen = check(target(container_command(), os.environ))
    print(seen)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
