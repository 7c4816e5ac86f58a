"""Verifying emitter tokens: provenance comes from the signature, never from the body."""

from assetbus.consumers.auth.cache import CachedTokenVerifier, VerifiedToken
from assetbus.consumers.auth.keys import JwksFile, JwksUrl, KeyNotFound, KeySource, StaticKeys, key_source
from assetbus.consumers.auth.tokens import MissingVerificationKeys, TokenError, TokenVerifier

__all__ = ["CachedTokenVerifier", "JwksFile", "JwksUrl", "KeyNotFound", "KeySource", "MissingVerificationKeys",
           "StaticKeys", "TokenError", "TokenVerifier", "VerifiedToken", "key_source"]
