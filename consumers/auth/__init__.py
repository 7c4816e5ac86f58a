"""Verifying emitter tokens: provenance comes from the signature, never from the body."""

from consumers.auth.tokens import TokenError, TokenVerifier

__all__ = ["TokenError", "TokenVerifier"]
