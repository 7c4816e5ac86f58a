"""Verifying emitter tokens: provenance comes from the signature, never from the body."""

from assetbus.consumers.auth.cache import CachedTokenVerifier
from assetbus.consumers.auth.keys import JwksFile, KeyNotFound, StaticKeys
from assetbus.consumers.auth.tokens import MissingVerificationKeys, TokenError, TokenVerifier

__all__ = ["CachedTokenVerifier", "JwksFile", "KeyNotFound", "MissingVerificationKeys", "StaticKeys", "TokenError",
           "TokenVerifier"]
