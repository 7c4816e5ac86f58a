"""Local TCP ports for the services a launcher or a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A localhost TCP port nobody listens on right now (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
