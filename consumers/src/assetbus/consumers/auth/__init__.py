"""Verifying emitter tokens: provenance comes from the signature, never from the body."""

from assetbus.consumers.auth.tokens import TokenError, TokenVerifier

__all__ = ["TokenError", "TokenVerifier"]
