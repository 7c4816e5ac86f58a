"""`assetbus token operator` mints a `ui:read` token with the installation's minting key (local secret or
signing key file); it verifies as an operator token and is refused as an emitter token."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app
from assetbus.consumers.api.ui_auth import SCOPE_UI_READ, operator_of
from assetbus.consumers.auth import JwksFile, TokenError, TokenVerifier

SECRET = "unit-test-secret-of-at-least-32-bytes"


def test_the_local_secret_mints_an_operator_token_that_is_no_emitter_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    result = CliRunner().invoke(app, ["token", "operator", "--name", "alice", "--ttl", "600"])
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    verifier = TokenVerifier(secret=SECRET)
    found = operator_of(verifier, token)
    assert found.subject == "operator:alice" and found.scopes == {SCOPE_UI_READ}
    assert 590 <= found.expires_at - time.time() <= 600
    with pytest.raises(TokenError, match="claims are malformed"):  # no provenance: the persister refuses it
        verifier.verify(token)


def test_a_signing_key_file_mints_it_for_a_jwks_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key, jwks = tmp_path / "current.pem", tmp_path / "jwks.json"
    made = CliRunner().invoke(app, ["token", "keygen", "--key", str(key), "--jwks", str(jwks)])
    assert made.exit_code == 0, made.output
    monkeypatch.setenv("ASSETBUS_TOKEN_SIGNING_KEY", str(key))
    result = CliRunner().invoke(app, ["token", "operator", "--name", "bob"])
    assert result.exit_code == 0, result.output
    found = operator_of(TokenVerifier(keys=JwksFile(jwks)), result.output.strip())
    assert found.subject == "operator:bob" and 8 * 3600 - 10 <= found.expires_at - time.time() <= 8 * 3600
    assert json.loads(jwks.read_text())["keys"][0]["kid"]


def test_a_non_positive_ttl_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", SECRET)
    result = CliRunner().invoke(app, ["token", "operator", "--ttl", "0"])
    assert result.exit_code != 0 and "--ttl" in result.output
