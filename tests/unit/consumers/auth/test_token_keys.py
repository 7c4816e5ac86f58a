"""Asymmetric tokens: minted with a private key, verified with public keys by `kid`; HS256 only with a secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
from pathlib import Path

import jwt
import pytest

from assetbus.consumers.auth import JwksFile, MissingVerificationKeys, StaticKeys, TokenError, TokenVerifier
from assetbus.producers import SigningKey, refresh_token, task_token
from assetbus.producers.errors import InvalidEmission

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


@pytest.fixture(scope="module")
def ed_key() -> SigningKey:
    return SigningKey.generate("EdDSA")


@pytest.fixture(scope="module")
def rsa_key() -> SigningKey:
    return SigningKey.generate("RS256")


@pytest.mark.parametrize("algorithm", ["EdDSA", "RS256"])
def test_a_token_signed_with_a_private_key_verifies_with_its_public_jwks(
        algorithm: str, ed_key: SigningKey, rsa_key: SigningKey) -> None:
    key = ed_key if algorithm == "EdDSA" else rsa_key
    token = task_token(key, "ingest", "run-1", "load")
    assert jwt.get_unverified_header(token) == {"alg": algorithm, "kid": key.kid, "typ": "JWT"}
    claims = TokenVerifier(keys=StaticKeys(key.jwks())).verify(token)
    assert (claims.dag_id, claims.task_id, claims.publish) == ("ingest", "load", "*")


def test_a_token_of_another_key_is_refused(ed_key: SigningKey) -> None:
    other = SigningKey.generate("EdDSA")
    with pytest.raises(TokenError, match="unknown"):
        TokenVerifier(keys=StaticKeys(ed_key.jwks())).verify(task_token(other, "d", "r", "t"))


def test_a_forged_kid_does_not_make_another_keys_signature_valid(ed_key: SigningKey) -> None:
    forger = SigningKey(SigningKey.generate("EdDSA").private_key, kid=ed_key.kid)
    with pytest.raises(TokenError, match="signature"):
        TokenVerifier(keys=StaticKeys(ed_key.jwks())).verify(task_token(forger, "d", "r", "t"))


def test_hs256_is_refused_by_a_service_that_holds_only_public_keys(ed_key: SigningKey) -> None:
    with pytest.raises(TokenError, match="HS256"):
        TokenVerifier(keys=StaticKeys(ed_key.jwks())).verify(task_token(SECRET, "d", "r", "t"))


def test_a_public_key_cannot_be_used_as_an_hmac_secret(ed_key: SigningKey) -> None:
    """The classic algorithm-confusion attack: HS256 with the (public) key bytes as the HMAC secret."""
    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")
    header = b64(json.dumps({"alg": "HS256", "kid": ed_key.kid}).encode())
    payload = b64(json.dumps({"kind": "task", "dag_id": "d", "run_id": "r", "task_id": "t", "map_index": -1,
                              "try_number": 1, "sub": "x", "aud": "assetbus", "exp": int(time.time()) + 60}).encode())
    secret = json.dumps(ed_key.public_jwk()).encode()
    signature = b64(hmac.new(secret, header + b"." + payload, hashlib.sha256).digest())
    with pytest.raises(TokenError, match="HS256"):
        TokenVerifier(keys=StaticKeys(ed_key.jwks())).verify((header + b"." + payload + b"." + signature).decode())


def test_a_service_without_keys_refuses_to_start() -> None:
    with pytest.raises(MissingVerificationKeys):
        TokenVerifier()


def test_rotation_through_kid_the_jwks_file_is_reread_when_it_changes(tmp_path: Path, ed_key: SigningKey) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(ed_key.jwks()))
    verifier = TokenVerifier(keys=JwksFile(jwks))
    old_token = task_token(ed_key, "d", "r", "t")
    new_key = SigningKey.generate("EdDSA")
    with pytest.raises(TokenError):
        verifier.verify(task_token(new_key, "d", "r", "t"))
    jwks.write_text(json.dumps(new_key.jwks(ed_key)))
    os.utime(jwks, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    assert verifier.verify(task_token(new_key, "d", "r", "t")).task_id == "t"
    assert verifier.verify(old_token).task_id == "t"  # the old key is still listed
    jwks.write_text(json.dumps(new_key.jwks()))
    os.utime(jwks, ns=(time.time_ns(), time.time_ns() + 2_000_000))
    with pytest.raises(TokenError):
        TokenVerifier(keys=JwksFile(jwks)).verify(old_token)  # retired


def test_a_missing_jwks_file_fails_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        JwksFile(tmp_path / "absent.json")


def test_the_key_id_is_the_public_keys_thumbprint_and_survives_a_pem_round_trip(ed_key: SigningKey) -> None:
    assert SigningKey.from_pem(ed_key.to_pem()).kid == ed_key.kid


def test_a_refresh_keeps_the_claims_and_never_outlives_the_attempt(ed_key: SigningKey) -> None:
    now = int(time.time())
    token = task_token(ed_key, "d", "r", "t", ttl_seconds=60, not_after=now + 120, publish=[])
    fresh = refresh_token(ed_key, token, ttl_seconds=3600)
    claims = TokenVerifier(keys=StaticKeys(ed_key.jwks())).verify(fresh)
    assert claims.task_id == "t" and claims.publish == [] and claims.exp <= now + 120


def test_a_token_whose_attempt_ended_cannot_be_refreshed() -> None:
    token = task_token(SECRET, "d", "r", "t", ttl_seconds=60, not_after=int(time.time()) + 1)
    ended = jwt.decode(token, SECRET, algorithms=["HS256"], audience="assetbus")
    ended["max_exp"] = int(time.time()) - 1
    with pytest.raises(InvalidEmission, match="ended"):
        refresh_token(SECRET, jwt.encode(ended, SECRET, algorithm="HS256"))


def test_only_the_minter_can_refresh(ed_key: SigningKey) -> None:
    with pytest.raises(InvalidEmission):
        refresh_token(SigningKey.generate("EdDSA"), task_token(ed_key, "d", "r", "t"))
