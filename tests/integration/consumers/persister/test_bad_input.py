"""A stream mixing valid commands with garbage bytes, unknown assets, bad tokens and oversize extras
(generated with hypothesis): each bad record gets its rejection or its dead letter, every valid one
is stored, and the persister keeps consuming."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from aiokafka import AIOKafkaProducer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.producers import issue_token
from assetbus.schemas import AssetRef, EmissionCommand, ErrorCode, Provenance, ReceiptStatus, SourceKind, Topics
from assetbus.settings import Settings
from tests.integration.consumers.persister.streams import read_topic, receipts_by_command, stored_command_ids

SOURCE = Provenance(kind=SourceKind.TASK, dag_id="ingest", run_id="run-1", task_id="load", map_index=-1, try_number=1)
ORDERS = AssetRef(name="orders", uri="s3://bucket/orders/")

text = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12)
extras = st.dictionaries(text, json_values, max_size=6)


@dataclass
class Item:
    """One record to send and what must come of it."""

    key: bytes | None
    value: bytes
    outcome: str  # "accepted", "rejected" or "dead letter"
    expected: frozenset[str] = frozenset()  # error codes or dead-letter reasons
    command_id: uuid.UUID | None = None


def command(token: str, topics: Topics, /, **changes: Any) -> tuple[uuid.UUID, dict[str, Any]]:
    body = EmissionCommand(
        command_id=uuid.uuid4(), producer_id="garbage-test", reply_to=topics.receipts, asset=ORDERS, source=SOURCE,
        token=token, dedupe_key=f"k-{uuid.uuid4()}", emitted_at=datetime.now(UTC)).model_dump(mode="json")
    body.update(changes)
    return uuid.UUID(body["command_id"]), body


@st.composite
def items(draw: st.DrawFn, secret: str, topics: Topics) -> Item:
    token = issue_token(secret, SOURCE)
    kind = draw(st.sampled_from(["valid", "bytes", "json", "object", "unknown asset", "bad token", "expired token",
                                 "other source", "oversize extra", "nul in extra", "nan in extra", "date without key",
                                 "schema version", "empty key", "missing reply topic", "illegal reply topic"]))

    def answerable(outcome: str, expected: str, **changes: Any) -> Item:
        command_id, body = command(token, topics, **changes)
        value = json.dumps(body, allow_nan=True).encode()
        return Item(b"orders", value, outcome, frozenset({expected}) if expected else frozenset(), command_id)

    if kind == "valid":
        key = draw(st.none() | text.filter(bool))
        date = draw(st.none() | st.datetimes(timezones=st.just(UTC))) if key else None
        return answerable("accepted", "", extra=draw(extras), partition_key=key,
                          partition_date=date.isoformat() if date else None)
    if kind == "bytes":
        return Item(draw(st.none() | st.binary(max_size=8)), draw(st.binary(min_size=1, max_size=300)),
                    "dead letter", frozenset({"not_json", "not_a_command", "no_reply_address"}))
    if kind == "json":
        return Item(None, json.dumps(draw(json_values)).encode(), "dead letter",
                    frozenset({"not_a_command", "no_reply_address"}))
    if kind == "object":
        return Item(None, json.dumps(draw(st.dictionaries(text, json_values, max_size=5))).encode(), "dead letter",
                    frozenset({"no_reply_address"}))
    if kind == "unknown asset":
        return answerable("rejected", ErrorCode.ASSET_NOT_FOUND,
                          asset={"name": draw(text.filter(lambda s: s.strip() and s != "orders")), "uri": "s3://x/"})
    if kind == "bad token":
        forged = draw(st.sampled_from([issue_token("another-secret-of-at-least-32-bytes!", SOURCE), "not-a-jwt",
                                       token[:-4] + "AAAA"]))
        return answerable("rejected", ErrorCode.UNAUTHORIZED, token=forged)
    if kind == "expired token":
        return answerable("rejected", ErrorCode.UNAUTHORIZED, token=issue_token(secret, SOURCE, ttl_seconds=-60))
    if kind == "other source":
        return answerable("rejected", ErrorCode.UNAUTHORIZED, source={**SOURCE.model_dump(mode="json"),
                                                                      "try_number": draw(st.integers(2, 9))})
    if kind == "oversize extra":
        blob = "x" * draw(st.integers(66_000, 90_000))
        return answerable("rejected", ErrorCode.EXTRA_TOO_LARGE, extra={"blob": blob})
    if kind == "nul in extra":
        return answerable("rejected", ErrorCode.INVALID_COMMAND, extra={"k": draw(text) + "\x00"})
    if kind == "nan in extra":
        return answerable("rejected", ErrorCode.INVALID_COMMAND, extra={"k": draw(st.sampled_from(
            [float("nan"), float("inf"), float("-inf")]))})
    if kind == "date without key":
        return answerable("rejected", ErrorCode.INVALID_PARTITION, partition_date=datetime.now(UTC).isoformat())
    if kind == "schema version":
        return answerable("rejected", ErrorCode.UNSUPPORTED_SCHEMA_VERSION,
                          schema_version=draw(st.integers(2, 10**6) | st.just("1") | st.none()))
    if kind == "empty key":
        return answerable("rejected", ErrorCode.INVALID_PARTITION, partition_key="")
    if kind == "missing reply topic":
        command_id, body = command(token, topics, reply_to=f"{topics.prefix}.nobody-listens-{uuid.uuid4().hex[:6]}")
        return Item(b"orders", json.dumps(body).encode(), "dead letter", frozenset({"no_reply_address"}), command_id)
    command_id, body = command(token, topics, reply_to=draw(st.sampled_from(["has space", "a/b", "x" * 300])))
    return Item(b"orders", json.dumps(body).encode(), "dead letter", frozenset({"no_reply_address"}), command_id)


def stream(secret: str, topics: Topics) -> st.SearchStrategy[list[Item]]:
    return st.lists(items(secret, topics), min_size=20, max_size=40)


async def send(bootstrap: str, topic: str, batch: list[Item]) -> dict[tuple[int, int], Item]:
    """Produce the items; returns them by (partition, offset)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=10, max_request_size=2**21)
    await producer.start()
    try:
        futures = [await producer.send(topic, item.value, key=item.key) for item in batch]
        placed = {}
        for item, future in zip(batch, futures, strict=True):
            metadata = await future
            placed[(metadata.partition, metadata.offset)] = item
        return placed
    finally:
        await producer.stop()


@settings(max_examples=8, deadline=None, database=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
async def test_each_bad_record_gets_its_rejection_or_dead_letter_and_the_valid_ones_are_stored(
        data: st.DataObject, infra: Settings, topics: Topics, token_secret: str, engine: AsyncEngine,
        persister: Persister, orders: AssetRef) -> None:
    batch = data.draw(stream(token_secret, topics))
    placed = await send(infra.bootstrap_servers, topics.emissions, batch)
    answered = {i.command_id for i in batch if i.outcome != "dead letter"}
    dead = {where for where, i in placed.items() if i.outcome == "dead letter"}

    receipts = receipts_by_command(await read_topic(
        infra.bootstrap_servers, topics.receipts,
        lambda recs: answered <= set(receipts_by_command(recs)), timeout_s=60))
    letters = await read_topic(infra.bootstrap_servers, topics.emissions_dlq,
                               lambda recs: dead <= {_source(r) for r in recs}, timeout_s=60)
    stored = set(await stored_command_ids(engine))

    by_source = {_source(r): r for r in letters}
    for where, item in placed.items():
        if item.outcome == "dead letter":
            letter = by_source[where]
            headers = dict(letter.headers)
            assert headers["assetbus.dlq.reason"].decode() in item.expected, (item, headers)
            assert headers["assetbus.dlq.error"]
            assert headers["assetbus.dlq.source.topic"].decode() == topics.emissions
            assert letter.value == item.value and letter.key == item.key
            assert item.command_id not in receipts and item.command_id not in stored
            continue
        assert item.command_id is not None
        (receipt,) = receipts[item.command_id]
        if item.outcome == "accepted":
            assert receipt.status is ReceiptStatus.ACCEPTED, (receipt, item.value[:300])
            assert item.command_id in stored
        else:
            assert receipt.status is ReceiptStatus.REJECTED
            assert receipt.error_code in item.expected, (receipt, item.value[:300])
            assert item.command_id not in stored
    # still consuming: a valid command sent after all that is answered
    command_id, body = command(issue_token(token_secret, SOURCE), topics)
    await send(infra.bootstrap_servers, topics.emissions, [Item(b"orders", json.dumps(body).encode(), "accepted")])
    after = await read_topic(infra.bootstrap_servers, topics.receipts,
                             lambda recs: command_id in receipts_by_command(recs), timeout_s=30)
    assert receipts_by_command(after)[command_id][0].accepted


def _source(record: Any) -> tuple[int, int]:
    headers = dict(record.headers)
    return int(headers["assetbus.dlq.source.partition"]), int(headers["assetbus.dlq.source.offset"])


def test_expired_tokens_are_really_expired(token_secret: str) -> None:
    """The generator's premise: a token issued a minute ago with no lifetime left is past its leeway."""
    token = issue_token(token_secret, SOURCE, ttl_seconds=-60)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert datetime.fromtimestamp(claims["exp"], UTC) < datetime.now(UTC) - timedelta(seconds=30)
