"""Verification keys: public keys from a JWKS file or URL, looked up by the token's `kid` (docs/security.md,
"Key rotation"). Services hold only public keys, so a service that verifies tokens cannot mint one.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from assetbus.consumers.errors import ConsumerError

ASYMMETRIC_ALGORITHMS = ("EdDSA", "RS256")


class KeyNotFound(ConsumerError):
    """No usable public key for a token's `kid` (unknown, or the source cannot be read)."""


class KeySource(Protocol):
    def key(self, kid: str) -> PyJWK:
        """The key for `kid`; raises KeyNotFound."""
        ...


def _usable(keys: dict[str, PyJWK], kid: str) -> PyJWK:
    found = keys.get(kid)
    if found is None:
        raise KeyNotFound(f"no key {kid!r} in the JWKS")
    if found.algorithm_name not in ASYMMETRIC_ALGORITHMS:
        raise KeyNotFound(f"key {kid!r} is not an EdDSA or RS256 public key")
    return found


def _by_kid(keys: list[PyJWK]) -> dict[str, PyJWK]:
    return {str(k.key_id): k for k in keys if k.key_id}


class JwksFile:
    """A JWKS JSON file, re-read when its modification time changes (so rotation needs no restart)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: int | None = None
        self._keys: dict[str, PyJWK] = {}
        self._load()  # a missing or unreadable file fails here, at start-up

    def _load(self) -> None:
        stamp = self.path.stat().st_mtime_ns
        if stamp == self._stamp:
            return
        self._keys = _by_kid(PyJWKSet.from_json(self.path.read_text()).keys)
        self._stamp = stamp

    def key(self, kid: str) -> PyJWK:
        with self._lock:
            if kid not in self._keys:
                try:
                    self._load()
                except (OSError, jwt.PyJWTError) as error:
                    raise KeyNotFound(f"the JWKS file {self.path} cannot be read: {error}") from error
            return _usable(self._keys, kid)


class JwksUrl:
    """A JWKS served over HTTP(S) (5 s timeout), cached; an unknown `kid` re-fetches, at most once every 10 s."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = PyJWKClient(url, cache_keys=False, lifespan=300, timeout=5)
        self._lock = threading.Lock()
        self._keys: dict[str, PyJWK] = {}
        self._fetched_at = 0.0
        self._refresh()

    def _refresh(self) -> None:
        self._keys = _by_kid(self._client.get_jwk_set(refresh=True).keys)
        self._fetched_at = time.monotonic()

    def key(self, kid: str) -> PyJWK:
        with self._lock:
            if kid not in self._keys and time.monotonic() - self._fetched_at >= 10.0:
                try:
                    self._refresh()
                except jwt.PyJWTError as error:
                    raise KeyNotFound(f"the JWKS at {self.url} cannot be fetched: {error}") from error
            return _usable(self._keys, kid)


class StaticKeys:
    """Public keys given in memory (tests, or a JWKS already parsed)."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        self._keys = _by_kid(PyJWKSet.from_dict(jwks).keys)

    def key(self, kid: str) -> PyJWK:
        return _usable(self._keys, kid)


def key_source(location: str) -> KeySource:
    """A JWKS file path, or an http(s) URL."""
    return JwksUrl(location) if location.startswith(("http://", "https://")) else JwksFile(location)
