"""Errors name their likely cause: where the allowed outlets came from, whether a persister runs on the
prefix, and where the signer's and the verifier's token keys are configured."""

from __future__ import annotations

import json

import pytest

from assetbus.consumers.auth import TokenError, TokenVerifier
from assetbus.producers import Asset, ReceiptTimeout, UnknownAsset, task_token
from assetbus.producers.context import context_from_environment
from assetbus.producers.testing import InMemoryEmitter
from assetbus.schemas import AssetRef

SECRET = "s" * 32


def test_unknown_asset_names_the_tokens_publish_claim() -> None:
    with InMemoryEmitter().task(outlets=[Asset("orders", "s3://b/orders/")]), \
            pytest.raises(UnknownAsset, match="publish") as raised:
        Asset("refunds", "s3://b/refunds/").emit()
    assert "assetbus token issue --outlet" in raised.value.origin


def test_unknown_asset_names_the_outlets_environment_variable() -> None:
    env = {"ASSETBUS_TOKEN": task_token(SECRET, "d", "r", "t"),
           "ASSETBUS_OUTLETS": json.dumps([{"name": "orders", "uri": "s3://b/orders/"}])}
    context = context_from_environment(env)
    assert context is not None
    with pytest.raises(UnknownAsset, match="ASSETBUS_OUTLETS environment variable") as raised:
        context.check_outlet(AssetRef(name="refunds", uri="s3://b/refunds/"))
    assert "orders (s3://b/orders/)" in str(raised.value)


def test_receipt_timeout_asks_whether_a_persister_runs_on_the_prefix() -> None:
    error = ReceiptTimeout("c-1", 10.0, 3, emissions_topic="prod.emissions")
    assert "is a persister running" in str(error) and "prod.emissions" in str(error) and error.retriable


def test_a_token_signed_with_another_key_says_where_each_key_is_configured() -> None:
    token = task_token("another-installation-" + SECRET, "d", "r", "t")
    with pytest.raises(TokenError) as raised:
        TokenVerifier(SECRET).verify(token)
    reason = raised.value.reason
    assert reason.startswith("token signature is invalid")
    assert "ASSETBUS_TOKEN_SECRET" in reason and "ASSETBUS_TOKEN_JWKS" in reason and "signer" in reason
