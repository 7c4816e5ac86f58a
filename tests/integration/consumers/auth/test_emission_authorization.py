"""Who may emit what, on both paths: scope x publication policy x path (Kafka, HTTP) x token kind.

The services hold only public keys (a JWKS with the current key and the one being rotated out). Every
combination gets the answer docs/security.md promises, and none gets a 500:

| token | scope without `emit` | policy without `orders` | otherwise |
| --- | --- | --- | --- |
| task, DAG run, rotated key still listed | insufficient_scope (403) | asset_not_declared (403) | accepted (200) |
| expired, other key, retired key, HS256 secret | unauthorized (HTTP 401 invalid_token) | same | same |
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig
from assetbus.consumers.persister import PersisterConfig
from assetbus.consumers.storage import register_asset
from assetbus.producers import SigningKey, issue_token
from assetbus.producers.tokens import TokenKey
from assetbus.schemas import AssetRef, EmissionCommand, ErrorCode, Provenance, ReceiptStatus, SourceKind, Topics
from assetbus.settings import Settings
from tests.helpers import replaced
from tests.integration.consumers.persister.streams import read_topic, receipts_by_command

ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")
REFUNDS = AssetRef(name="refunds", uri="s3://bucket/refunds/")
TASK = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1, try_number=1)
DAG = Provenance(kind=SourceKind.DAG, dag_id="ingest", run_id="run-1")
CURRENT, ROTATED, RETIRED, OTHER = (SigningKey.generate("EdDSA"), SigningKey.generate("RS256"),
                                    SigningKey.generate("EdDSA"), SigningKey.generate("EdDSA"))
POLICIES: dict[str, Any] = {"any asset": "*", "orders": [ORDERS], "refunds only": [REFUNDS], "none": None}


@dataclass(frozen=True)
class Kind:
    """A kind of token: its source, the key that signs it, how long it lives, and whether it is valid."""

    source: Provenance
    key: TokenKey
    valid: bool
    ttl_seconds: int = 600

    def scopes(self) -> dict[str, str]:
        own = "ti:self" if self.source.kind is SourceKind.TASK else "dag:self"
        return {"emit": f"emit {own}", "no emit": own, "no scope": ""}


KINDS = {
    "task": Kind(TASK, CURRENT, True),
    "dag run": Kind(DAG, CURRENT, True),
    "rotated key": Kind(TASK, ROTATED, True),
    "expired": Kind(TASK, CURRENT, False, ttl_seconds=-120),
    "other key": Kind(TASK, OTHER, False),
    "retired key": Kind(TASK, RETIRED, False),
    "hs256 secret": Kind(TASK, "a-local-secret-the-services-do-not-hold", False),
}


def token(kind: Kind, scope: str, policy: Any) -> str:
    claims: dict[str, object] | None = {"publish": None} if policy is None else None
    return issue_token(kind.key, kind.source, ttl_seconds=kind.ttl_seconds, scope=scope,
                       publish=policy if policy is not None else "*", extra_claims=claims)


def promised(kind: Kind, scope: str, policy: Any) -> ErrorCode | None:
    """The rejection docs/security.md promises (None: accepted)."""
    if not kind.valid:
        return ErrorCode.UNAUTHORIZED
    if "emit" not in scope.split():
        return ErrorCode.INSUFFICIENT_SCOPE
    if policy != "*" and ORDERS not in (policy or []):
        return ErrorCode.ASSET_NOT_DECLARED
    return None


def combinations(kind: Kind) -> list[tuple[str, str, Any]]:
    return [(f"{scope_name}/{policy_name}", scope, policy)
            for scope_name, scope in kind.scopes().items() for policy_name, policy in POLICIES.items()]


@pytest.fixture(scope="module")
def jwks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "jwks.json"
    path.write_text(json.dumps(CURRENT.jwks(ROTATED)))  # RETIRED was removed; OTHER was never listed
    return path


@pytest.fixture
def persister_config(persister_config: PersisterConfig, jwks_file: Path) -> PersisterConfig:
    config: PersisterConfig = replaced(persister_config, token_jwks=str(jwks_file), token_secret=None)
    return config


@pytest.fixture
def api_config(api_config: ApiConfig, jwks_file: Path) -> ApiConfig:
    config: ApiConfig = replaced(api_config, token_jwks=str(jwks_file), token_secret=None)
    return config


@pytest.fixture
async def assets(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        for asset in (ORDERS, REFUNDS):
            await register_asset(conn, asset.name, asset.uri)


@pytest.mark.usefixtures("assets", "persister")
@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_kafka_emission_gets_the_promised_receipt(kind_name: str, infra: Settings, topics: Topics) -> None:
    kind = KINDS[kind_name]
    sent: dict[uuid.UUID, tuple[str, ErrorCode | None]] = {}
    producer = AIOKafkaProducer(bootstrap_servers=infra.bootstrap_servers, acks="all")
    await producer.start()
    try:
        for label, scope, policy in combinations(kind):
            command = EmissionCommand(command_id=uuid.uuid4(), producer_id="authz-test", reply_to=topics.receipts,
                                      asset=ORDERS, source=kind.source, token=token(kind, scope, policy),
                                      emitted_at=datetime.now(UTC))
            sent[command.command_id] = (label, promised(kind, scope, policy))
            await producer.send_and_wait(topics.emissions, command.model_dump_json().encode(), key=b"orders")
    finally:
        await producer.stop()
    records = await read_topic(infra.bootstrap_servers, topics.receipts,
                               lambda recs: set(sent) <= set(receipts_by_command(recs)), timeout_s=60)
    receipts = receipts_by_command(records)
    answers = {label: (receipts[command_id][0].error_code, receipts[command_id][0].status)
               for command_id, (label, _) in sent.items()}
    expected = {label: (code, ReceiptStatus.ACCEPTED if code is None else ReceiptStatus.REJECTED)
                for label, code in sent.values()}
    assert answers == expected
    for command_id, (_, code) in sent.items():
        if code is ErrorCode.ASSET_NOT_DECLARED:
            assert "'orders'" in (receipts[command_id][0].error_message or "")


HTTP_STATUS = {None: 200, ErrorCode.UNAUTHORIZED: 401, ErrorCode.INSUFFICIENT_SCOPE: 403,
               ErrorCode.ASSET_NOT_DECLARED: 403}
HTTP_CODE = {ErrorCode.UNAUTHORIZED: "invalid_token", ErrorCode.INSUFFICIENT_SCOPE: "insufficient_scope",
             ErrorCode.ASSET_NOT_DECLARED: "asset_not_declared"}


@pytest.mark.usefixtures("assets", "persister")
@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_http_emission_gets_the_promised_status(kind_name: str, api_client: httpx.AsyncClient) -> None:
    kind = KINDS[kind_name]
    answers, expected = {}, {}
    for label, scope, policy in combinations(kind):
        code = promised(kind, scope, policy)
        response = await api_client.post("/execution/asset-events/emit", json={"asset": ORDERS.model_dump()},
                                         headers={"Authorization": f"Bearer {token(kind, scope, policy)}"})
        body = response.json()
        answers[label] = (response.status_code, body.get("status") if code is None else body.get("code"))
        expected[label] = (HTTP_STATUS[code], "accepted" if code is None else HTTP_CODE[code])
        if code is ErrorCode.ASSET_NOT_DECLARED:
            assert "'orders'" in body["message"]
    assert answers == expected
