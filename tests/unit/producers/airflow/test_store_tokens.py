"""The state store backend's tokens: `ti:self` only, nothing to publish, cached per task instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from assetbus.producers import SigningKey
from assetbus.producers.airflow.store_tokens import MissingSigningKey, StateTokens, signing_key_from_env
from assetbus.producers.tokens import unverified_claims

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def test_a_state_token_may_touch_state_but_never_emit() -> None:
    tokens = StateTokens(SECRET)
    claims = unverified_claims(tokens.for_task(("ingest", "r1", "load", 3)))
    assert claims["scope"].split() == ["ti:self", "ti:mapped"]  # no emit; ti:mapped for Airflow's core-API clear
    assert claims["publish"] == []
    assert (claims["dag_id"], claims["run_id"], claims["task_id"], claims["map_index"]) == ("ingest", "r1", "load", 3)
    assert claims["exp"] - claims["iat"] == 300


def test_tokens_are_cached_per_task_instance() -> None:
    tokens = StateTokens(SECRET)
    first = tokens.for_task(("ingest", "r1", "load", -1))
    assert tokens.for_task(("ingest", "r1", "load", -1)) == first
    assert tokens.for_task(("ingest", "r1", "load", 0)) != first


def test_the_key_comes_from_a_pem_file_before_the_local_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = SigningKey.generate("EdDSA")
    pem = tmp_path / "key.pem"
    pem.write_bytes(key.to_pem())
    monkeypatch.delenv("ASSETBUS_TOKEN_KEY_ID", raising=False)
    monkeypatch.setenv("ASSETBUS_TOKEN_SIGNING_KEY", str(pem))
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", "s")
    loaded = signing_key_from_env()
    assert isinstance(loaded, SigningKey) and loaded.kid == key.kid
    monkeypatch.delenv("ASSETBUS_TOKEN_SIGNING_KEY")
    assert signing_key_from_env() == "s"
    monkeypatch.delenv("ASSETBUS_TOKEN_SECRET")
    with pytest.raises(MissingSigningKey, match="ASSETBUS_TOKEN_SIGNING_KEY"):
        signing_key_from_env()
