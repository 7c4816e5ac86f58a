"""A TLS server on 127.0.0.1 whose certificate no client trusts: every handshake with it fails on the
client's side with `ssl.SSLCertVerificationError`, as a broker's does for a client given the wrong CA."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def self_signed(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files in `folder`), made by openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


@dataclass(frozen=True)
class UntrustedServer:
    port: int
    other_ca: Path
    """A CA file that did not sign the server's certificate (what a client given the wrong CA has)."""
    certificate: Path
    """The server's own (self-signed) certificate: as a CA file, it makes the server trusted."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.other_ca))


@contextlib.contextmanager
def untrusted_tls_server(folder: Path) -> Iterator[UntrustedServer]:
    """Serve TLS handshakes on 127.0.0.1 (a thread per connection) until the block ends."""
    cert, key = self_signed(folder, "server")
    other_ca, _ = self_signed(folder, "other-ca")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def handshake(connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            connection.settimeout(5)
            with context.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=handshake, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield UntrustedServer(listener.getsockname()[1], other_ca, cert)
    finally:
        stop.set()
        thread.join(5)
        listener.close()
