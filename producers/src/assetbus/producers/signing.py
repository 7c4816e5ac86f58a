"""Signing keys: an Ed25519 (EdDSA) or RSA (RS256) private key with its key id (by default the RFC 7638
thumbprint of the public key), held only where tokens are minted. Services verify with the public half, published
as a JWKS (`SigningKey.jwks()`); docs/security.md, "Key rotation", rotates keys with it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from jwt.algorithms import OKPAlgorithm, RSAAlgorithm

PrivateKey = ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
ASYMMETRIC_ALGORITHMS = ("EdDSA", "RS256")
"""The algorithms services accept from a JWKS; HS256 is for local development only."""
_THUMBPRINT_MEMBERS = {"OKP": ("crv", "kty", "x"), "RSA": ("e", "kty", "n")}


def _public_jwk(key: PrivateKey) -> dict[str, Any]:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return dict(OKPAlgorithm.to_jwk(key.public_key(), as_dict=True))
    return dict(RSAAlgorithm.to_jwk(key.public_key(), as_dict=True))


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 thumbprint (SHA-256, base64url) of a public JWK."""
    members = {name: jwk[name] for name in _THUMBPRINT_MEMBERS[jwk["kty"]]}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass(frozen=True)
class SigningKey:
    """A private key that mints tokens, its algorithm and its key id (sent as the token's `kid`)."""

    private_key: PrivateKey = field(repr=False)
    kid: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.private_key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
            raise TypeError("a signing key is an Ed25519 or RSA private key")
        if not self.kid:
            object.__setattr__(self, "kid", thumbprint(_public_jwk(self.private_key)))

    @property
    def algorithm(self) -> str:
        return "EdDSA" if isinstance(self.private_key, ed25519.Ed25519PrivateKey) else "RS256"

    @classmethod
    def generate(cls, algorithm: str = "EdDSA", *, kid: str = "") -> SigningKey:
        """A fresh key: Ed25519 for EdDSA, 2048-bit RSA for RS256."""
        if algorithm == "EdDSA":
            return cls(ed25519.Ed25519PrivateKey.generate(), kid)
        if algorithm == "RS256":
            return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid)
        raise ValueError(f"algorithm must be one of {ASYMMETRIC_ALGORITHMS}, not {algorithm!r}")

    @classmethod
    def from_pem(cls, pem: bytes | str, *, kid: str = "") -> SigningKey:
        """Load an unencrypted PKCS#8 (or traditional) PEM private key."""
        data = pem.encode() if isinstance(pem, str) else pem
        key = serialization.load_pem_private_key(data, password=None)
        if not isinstance(key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
            raise ValueError("the PEM holds neither an Ed25519 nor an RSA private key")
        return cls(key, kid)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, kid: str = "") -> SigningKey:
        return cls.from_pem(Path(path).read_bytes(), kid=kid)

    def to_pem(self) -> bytes:
        return self.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption())

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK with `kid`, `alg` and `use`: what verifying services hold."""
        return {**_public_jwk(self.private_key), "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def jwks(self, *also: SigningKey) -> dict[str, Any]:
        """A JWKS with this key's public half (and those of `also`, e.g. the key being rotated out)."""
        return {"keys": [self.public_jwk(), *(other.public_jwk() for other in also)]}
