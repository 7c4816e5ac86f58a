"""The SDK refuses what the token's signed publication policy refuses, as the persister would."""

from __future__ import annotations

import pytest

from assetbus.producers import Asset, UnknownAsset, issue_token, task_context, task_token
from assetbus.producers.testing import InMemoryEmitter
from assetbus.schemas import ErrorCode, Provenance, SourceKind

ORDERS, REFUNDS = Asset("orders", "s3://bucket/orders/"), Asset("refunds", "s3://bucket/refunds/")


def test_an_asset_outside_the_tokens_publish_claim_is_refused_with_the_persisters_code() -> None:
    bus = InMemoryEmitter()
    token = task_token(bus.secret, "ingest", "r1", "load", publish=[ORDERS])
    with task_context(token, transport=bus.transport), pytest.raises(UnknownAsset) as raised:
        REFUNDS.emit()
    assert raised.value.code is ErrorCode.ASSET_NOT_DECLARED and "refunds" in str(raised.value)
    assert bus.commands == []
    with task_context(token, transport=bus.transport):
        assert ORDERS.emit().accepted


def test_a_token_without_a_publication_policy_may_publish_nothing() -> None:
    bus = InMemoryEmitter()
    source = Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    token = issue_token(bus.secret, source, extra_claims={"publish": None})
    with task_context(token, transport=bus.transport), pytest.raises(UnknownAsset, match="none"):
        ORDERS.emit()


def test_any_asset_mode_leaves_the_check_to_registration() -> None:
    bus = InMemoryEmitter()
    with task_context(task_token(bus.secret, "d", "r", "t", publish="*"), transport=bus.transport):
        assert REFUNDS.emit().accepted


def test_outlets_can_narrow_the_claim_but_never_widen_it() -> None:
    bus = InMemoryEmitter()
    token = task_token(bus.secret, "d", "r", "t", publish=[ORDERS])
    with task_context(token, outlets=[ORDERS, REFUNDS], transport=bus.transport), pytest.raises(UnknownAsset):
        REFUNDS.emit()
