"""Token keys, read once at the edge; docs/security.md ("Who holds which key") says who holds which.

The HS256 secret is for local mode only, `ASSETBUS_TOKEN_SECRET` or the file `assetbus infra up` writes into
its home folder. Nothing invents a secret on the fly: without keys a service refuses to start.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.consumers.settings import ENV_FILE

if TYPE_CHECKING:
    from assetbus.producers.tokens import TokenKey

__all__ = ["LOCAL_SECRET_FILE", "SecurityConfigError", "SecuritySettings", "ensure_local_secret"]

LOCAL_SECRET_FILE = "token-secret"
"""The local mode's HS256 secret, in the launcher's home folder (written by `assetbus infra up`)."""


class SecurityConfigError(Exception):
    """The keys this command needs are not configured; the message says which variable to set."""


def ensure_local_secret(home: Path) -> Path:
    """Local mode (`assetbus infra up`): the HS256 secret of this machine, created once (mode 0600)."""
    path = home / LOCAL_SECRET_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path


class SecuritySettings(BaseSettings):
    """Token keys. Configuration only: never in the repo."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_", env_file=ENV_FILE, extra="ignore")

    token_secret: str | None = Field(default=None, repr=False, description="ASSETBUS_TOKEN_SECRET: HS256 key "
                                     "that mints and verifies tokens; local development only.")
    token_signing_key: Path | None = Field(default=None, description="ASSETBUS_TOKEN_SIGNING_KEY: PEM file of "
                                           "the Ed25519 or RSA private key that mints tokens (minters only).")
    token_key_id: str | None = Field(default=None, description="ASSETBUS_TOKEN_KEY_ID: `kid` of that key "
                                     "(default: its RFC 7638 thumbprint, as `assetbus token keygen` lists it).")
    token_jwks: str | None = Field(default=None, description="ASSETBUS_TOKEN_JWKS: JWKS file or http(s) URL "
                                   "of the public keys that verify tokens (services).")

    def _local_secret(self, home: Path) -> str | None:
        if self.token_secret:
            return self.token_secret
        path = home / LOCAL_SECRET_FILE
        return path.read_text().strip() if path.exists() else None

    def secret(self, home: Path) -> str:
        """The HS256 secret of local mode: configured, or the one `assetbus infra up` wrote."""
        found = self._local_secret(home)
        if not found:
            raise SecurityConfigError("no local token secret: run `assetbus infra up` (local mode) or set "
                                      "ASSETBUS_TOKEN_SECRET; outside local development set "
                                      "ASSETBUS_TOKEN_SIGNING_KEY / ASSETBUS_TOKEN_JWKS")
        return found

    def signing_key(self, home: Path) -> TokenKey:
        """The private signing key if one is configured, else local mode's HS256 secret."""
        if self.token_signing_key is not None:
            from assetbus.producers.signing import SigningKey  # cryptography: only where a key is read

            return SigningKey.from_file(self.token_signing_key, kid=self.token_key_id or "")
        return self.secret(home)

    def verification(self, home: Path) -> dict[str, str | None]:
        """The verifying keys a service takes: the JWKS, and the HS256 secret only in local mode."""
        if self.token_jwks:
            return {"token_jwks": self.token_jwks, "token_secret": self.token_secret}
        found = self._local_secret(home)
        if not found:
            raise SecurityConfigError("no token verification keys: set ASSETBUS_TOKEN_JWKS (a JWKS file or "
                                      "URL), or run `assetbus infra up` for local mode")
        return {"token_jwks": None, "token_secret": found}
