"""The state clients' side of the protocol: what they send, how they read answers and errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest

from assetbus.producers import Asset, dag_token, task_token
from assetbus.producers.state import (
    API_VERSION,
    AsyncStateClient,
    InvalidStateRequest,
    StateClient,
    StateConflict,
    StateError,
    StateForbidden,
    StateUnauthorized,
    StateUnavailable,
    ValueTooLarge,
)
from assetbus.schemas import AssetRef, task_instance_id

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"
TOKEN = task_token(SECRET, "ingest", "run-1", "load", map_index=2, try_number=3)
OWN_TI = task_instance_id("ingest", "run-1", "load", 2)
ENTRY = {"value": "41"}
TAGGED = {"ETag": '"4"'}

Handler = Callable[[httpx.Request], httpx.Response]


def sync_client(handler: Handler, token: str = TOKEN) -> StateClient:
    return StateClient("http://api", token, http=httpx.Client(base_url="http://api",
                                                               transport=httpx.MockTransport(handler)))


def async_client(handler: Handler, token: str = TOKEN) -> AsyncStateClient:
    return AsyncStateClient("http://api", token, http=httpx.AsyncClient(base_url="http://api",
                                                                         transport=httpx.MockTransport(handler)))


def test_task_state_addresses_the_tokens_own_task_instance_with_bearer_and_version() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ENTRY, headers=TAGGED)

    assert sync_client(handler).task_state.get("checkpoint") == "41"
    request = seen[0]
    assert request.method == "GET" and request.url.path == f"/execution/store/ti/{OWN_TI}/checkpoint"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["assetbus-api-version"] == API_VERSION


def test_keys_are_escaped_as_one_path_segment() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ENTRY)

    sync_client(handler).task_state.get("a b?c#d/e")
    assert seen[0].url.raw_path.decode().endswith("/a%20b%3Fc%23d%2Fe")


def test_an_absent_key_reads_as_the_default_and_its_delete_as_false() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "DELETE":
            return httpx.Response(204, headers={"Assetbus-Deleted": "0"})
        return httpx.Response(404, json={"detail": {"reason": "not_found", "message": "no"}})

    client = sync_client(handler)
    assert client.task_state.get("checkpoint") is None
    assert client.task_state.get("checkpoint", -1) == -1
    assert client.task_state.delete("checkpoint") is False


def test_a_404_that_is_not_an_absent_key_is_an_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "Not Found"})

    with pytest.raises(StateError) as raised:
        sync_client(handler).task_state.get("checkpoint")
    assert raised.value.status == 404


def test_set_with_if_version_sends_if_match_and_a_412_is_a_conflict_with_the_current_version() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(412, json={"detail": {"reason": "precondition_failed", "message": "m",
                                                    "current_version": 5}})

    with pytest.raises(StateConflict) as raised:
        sync_client(handler).task_state.set("checkpoint", "42", if_version=4)
    assert raised.value.current_version == 5 and raised.value.code == "precondition_failed"
    assert seen[0].headers["if-match"] == '"4"' and json.loads(seen[0].content) == {"value": "42"}


def test_only_if_absent_sends_if_none_match_star() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204, headers={"ETag": '"1"'})

    entry = sync_client(handler).task_state.set("checkpoint", {"batch": 0}, only_if_absent=True)
    assert (entry.key, entry.value, entry.version) == ("checkpoint", {"batch": 0}, 1)
    assert seen[0].headers["if-none-match"] == "*"


def test_json_values_and_an_aware_expiry_are_sent_as_airflows_body() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204, headers=TAGGED)

    when = datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=2)))
    sync_client(handler).task_state.set("k", [1, {"a": True}], expires_at=when)
    assert json.loads(seen[0].content) == {"value": [1, {"a": True}], "expires_at": "2030-01-01T00:00:00+02:00"}


def test_response_fields_the_client_does_not_know_are_ignored() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={**ENTRY, "expires_at": None, "written_by": "ti:x"}, headers=TAGGED)

    entry = sync_client(handler).task_state.get_entry("checkpoint")
    assert entry is not None and (entry.value, entry.version) == ("41", 4)


@pytest.mark.parametrize(("status", "error"), [
    (401, StateUnauthorized), (403, StateForbidden), (413, ValueTooLarge), (422, InvalidStateRequest),
    (422, ValueTooLarge),
    (400, InvalidStateRequest), (503, StateUnavailable),
])
def test_error_statuses_map_to_typed_errors_with_the_servers_code(status: int, error: type[StateError]) -> None:
    reason = "value_too_large" if error is ValueTooLarge else f"code_{status}"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"detail": {"reason": reason, "message": "m"}})

    with pytest.raises(error) as raised:
        sync_client(handler).task_state.set("k", "v")
    assert raised.value.code == reason and raised.value.status == status
    assert raised.value.retriable is (status >= 500)


def test_clear_sends_all_map_indices_explicitly() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204, headers={"Assetbus-Deleted": "3"})

    client = sync_client(handler)
    assert client.task_state.clear() == 3
    assert client.task_state.clear(all_map_indices=True) == 3
    assert [r.url.params["all_map_indices"] for r in seen] == ["false", "true"]
    assert seen[0].method == "DELETE" and seen[0].url.path == f"/execution/store/ti/{OWN_TI}"


def test_asset_state_uses_name_and_key_query_parameters() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204, headers={"Assetbus-Deleted": "1", **TAGGED})

    client = sync_client(handler)
    client.asset("orders").state.set("watermark", "2026-10-01")
    assert client.asset(AssetRef(name="orders", uri="s3://b/o/")).state.clear() == 1
    assert seen[0].url.path == "/execution/store/asset/by-name/value"
    assert dict(seen[0].url.params) == {"name": "orders", "key": "watermark"}
    assert seen[1].url.path == "/execution/store/asset/by-name/clear" and dict(seen[1].url.params) == {"name": "orders"}


def test_an_asset_handle_names_its_asset() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ENTRY)

    sync_client(handler).asset(Asset("orders", "s3://b/o/")).state.get("watermark")
    assert dict(seen[0].url.params) == {"name": "orders", "key": "watermark"}
    with pytest.raises(TypeError):
        sync_client(handler).asset(42)


def test_a_dag_run_token_has_no_task_state() -> None:
    client = sync_client(lambda request: httpx.Response(500), token=dag_token(SECRET, "ingest", "run-1"))
    with pytest.raises(StateForbidden):
        client.task_state.get("k")


@pytest.mark.parametrize("value", [None, float("nan"), {"x": float("inf")}, {1, 2}, object()])
def test_values_must_be_json_and_not_null_before_anything_is_sent(value: object) -> None:
    client = sync_client(lambda request: httpx.Response(500))
    with pytest.raises(InvalidStateRequest):
        client.task_state.set("k", value)


def test_an_expiry_must_be_aware_and_asset_state_has_none() -> None:
    client = sync_client(lambda request: httpx.Response(500))
    with pytest.raises(InvalidStateRequest):
        client.task_state.set("k", 1, expires_at=datetime(2030, 1, 1))
    with pytest.raises(InvalidStateRequest):
        client.asset("orders").state.set("k", 1, expires_at=datetime(2030, 1, 1, tzinfo=UTC))


def test_conditions_not_both_and_keys_not_empty() -> None:
    client = sync_client(lambda request: httpx.Response(500))
    with pytest.raises(InvalidStateRequest):
        client.task_state.set("k", "v", if_version=1, only_if_absent=True)
    with pytest.raises(InvalidStateRequest):
        client.task_state.get("")


def test_a_refused_connection_is_retried_then_unavailable() -> None:
    attempts = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal attempts
        attempts += 1
        raise httpx.ConnectError("refused", request=request)

    client = StateClient("http://api", TOKEN, connect_retries=1,
                         http=httpx.Client(base_url="http://api", transport=httpx.MockTransport(handler)))
    with pytest.raises(StateUnavailable) as raised:
        client.task_state.get("k")
    assert attempts == 2 and raised.value.retriable


async def test_the_async_client_has_the_same_shape() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE" and request.url.path.endswith("checkpoint"):
            return httpx.Response(204, headers={"Assetbus-Deleted": "1"})
        if request.method == "DELETE":
            return httpx.Response(204, headers={"Assetbus-Deleted": "2"})
        if request.method == "PUT":
            return httpx.Response(204, headers={"ETag": '"5"'})
        return httpx.Response(200, json=ENTRY, headers=TAGGED)

    async with async_client(handler) as client:
        assert await client.task_state.get("checkpoint") == "41"
        assert (await client.task_state.set("checkpoint", "42", if_version=4)).version == 5
        assert await client.task_state.delete("checkpoint") is True
        assert await client.task_state.clear(all_map_indices=True) == 2
        assert await client.asset("orders").state.get("watermark") == "41"
    assert [r.method for r in seen] == ["GET", "PUT", "DELETE", "DELETE", "GET"]
    assert seen[1].headers["if-match"] == '"4"'


def test_succeeded_posts_on_success_and_returns_how_many_keys_went() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204, headers={"Assetbus-Deleted": "2"})

    assert sync_client(handler).task_state.succeeded() == 2
    assert seen[0].method == "POST" and seen[0].url.path == f"/execution/store/ti/{OWN_TI}/on-success"


def test_the_waits_between_connection_attempts_are_the_shared_retry_policys(monkeypatch: pytest.MonkeyPatch) -> None:
    from assetbus.producers.state.protocol import connect_policy

    waits: list[float] = []
    monkeypatch.setattr("assetbus.producers.api_client.time.sleep", waits.append)

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = StateClient("http://api", TOKEN, connect_retries=3,
                         http=httpx.Client(base_url="http://api", transport=httpx.MockTransport(handler)))
    with pytest.raises(StateUnavailable):
        client.task_state.get("k")
    policy = connect_policy(3)
    ceilings = [policy.initial_s * policy.multiplier**n for n in range(3)]
    assert len(waits) == 3
    assert all((1 - policy.jitter) * c <= w <= c for w, c in zip(waits, ceilings, strict=True)), waits
