"""The token cache verifies a signature once, but checks expiry on every use."""

from __future__ import annotations

import pytest

from assetbus.consumers.auth import TokenError, TokenVerifier
from assetbus.consumers.auth.cache import CachedTokenVerifier
from assetbus.producers import task_token
from assetbus.schemas import EmitterClaims

SECRET = "unit-test-secret-of-at-least-32-bytes"


class CountingVerifier(TokenVerifier):
    calls = 0

    def verify(self, token: str) -> EmitterClaims:
        type(self).calls += 1
        return super().verify(token)


def test_a_token_is_verified_once_and_its_provenance_reused() -> None:
    CountingVerifier.calls = 0
    cache = CachedTokenVerifier(CountingVerifier(SECRET))
    token = task_token(SECRET, "d", "r", "t")
    first, again = cache.verify(token), cache.verify(token)
    assert first is again and CountingVerifier.calls == 1
    assert first.source == ("task", "d", "r", "t", -1, 1)
    assert first.dedupe_scope == first.provenance.dedupe_scope()


def test_a_cached_token_expires_on_time() -> None:
    now = [1_000_000.0]
    cache = CachedTokenVerifier(TokenVerifier(SECRET), clock=lambda: now[0])
    token = task_token(SECRET, "d", "r", "t", ttl_seconds=3600)
    verified = cache.verify(token)
    now[0] = verified.expires_at + 60.0
    with pytest.raises(TokenError, match="expired"):
        cache.verify(token)


def test_invalid_tokens_are_rejected_every_time_and_never_cached() -> None:
    cache = CachedTokenVerifier(TokenVerifier(SECRET))
    forged = task_token("another-secret-of-at-least-32-bytes!!", "d", "r", "t")
    for _ in range(2):
        with pytest.raises(TokenError):
            cache.verify(forged)
    assert len(cache._valid) == 0


def test_the_cache_is_bounded() -> None:
    cache = CachedTokenVerifier(TokenVerifier(SECRET), size=3)
    for run in range(5):
        cache.verify(task_token(SECRET, "d", f"r{run}", "t"))
    assert len(cache._valid) == 3


def test_an_expired_attested_token_is_refused_as_its_attempt_ended_cached_or_not() -> None:
    now = [1_000_000.0]
    cache = CachedTokenVerifier(TokenVerifier(SECRET), clock=lambda: now[0])
    attested = task_token(SECRET, "d", "r", "t", ttl_seconds=3600, attested=True)
    now[0] = cache.verify(attested).expires_at + 60.0
    with pytest.raises(TokenError) as cached:
        cache.verify(attested)
    assert cached.value.code == "attempt_ended"
    with pytest.raises(TokenError) as fresh:  # never seen before: the verifier itself says so
        TokenVerifier(SECRET).verify(task_token(SECRET, "d", "r", "t", ttl_seconds=-60, attested=True))
    assert fresh.value.code == "attempt_ended"
    with pytest.raises(TokenError) as plain:  # a token of a runner of one's own: still `expired`
        TokenVerifier(SECRET).verify(task_token(SECRET, "d", "r", "t", ttl_seconds=-60))
    assert plain.value.code is None and "expired" in plain.value.reason


def test_a_token_carries_its_issuer_and_one_without_it_or_with_another_is_refused() -> None:
    import jwt

    from assetbus.producers.tokens import unverified_claims

    token = task_token(SECRET, "d", "r", "t")
    assert unverified_claims(token)["iss"] == "assetbus"
    claims = unverified_claims(token)
    for changed in ({k: v for k, v in claims.items() if k != "iss"}, {**claims, "iss": "another-installation"}):
        with pytest.raises(TokenError, match="iss"):
            TokenVerifier(SECRET).verify(jwt.encode(changed, SECRET, algorithm="HS256"))
