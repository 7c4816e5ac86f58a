"""The published OpenAPI spec: every route, its statuses, the bearer scheme and the version header."""

from __future__ import annotations

from typing import Any

import pytest

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.api.gateway import REJECTION_STATUS
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import ErrorCode

TI_KEY = "/execution/store/ti/{task_instance_id}/{key}"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    app = create_api(ApiConfig(kafka=KafkaConnection(bootstrap_servers=("unused:9092",)), database_url="postgresql+asyncpg://u@h/db",
                               token_secret="unused"))
    return app.openapi()


def test_every_route_of_the_issue_is_published(spec: dict[str, Any]) -> None:
    routes = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    assert routes >= {
        ("GET", TI_KEY), ("PUT", TI_KEY), ("DELETE", TI_KEY), ("DELETE", "/execution/store/ti/{task_instance_id}"),
        ("GET", "/execution/store/asset/by-name/value"), ("PUT", "/execution/store/asset/by-name/value"),
        ("DELETE", "/execution/store/asset/by-name/value"), ("DELETE", "/execution/store/asset/by-name/clear"),
        ("GET", "/execution/state/ti/{task_instance_id}/{key}"), ("DELETE", "/execution/state/asset/clear"),
        ("POST", "/execution/asset-events/emit"),
    }


def test_secured_routes_document_401_403_422_and_the_version_header(spec: dict[str, Any]) -> None:
    for path, ops in spec["paths"].items():
        if not path.startswith("/execution/"):
            continue
        for method, op in ops.items():
            assert {"401", "403", "422", "400"} <= set(op["responses"]), (method, path)
            assert op["security"] == [{"TaskToken": []}]
            assert "Assetbus-API-Version" in {p["name"] for p in op["parameters"]}
            body = "/StoreErrorBody" if path.startswith(("/execution/store/", "/execution/state/")) else "/ErrorBody"
            assert op["responses"]["401"]["content"]["application/json"]["schema"]["$ref"].endswith(body)


def test_compare_and_set_routes_document_412_and_if_match(spec: dict[str, Any]) -> None:
    put = spec["paths"]["/execution/store/ti/{task_instance_id}/{key}"]["put"]
    assert "412" in put["responses"]
    assert {"If-Match", "If-None-Match"} <= {p["name"] for p in put["parameters"]}


def test_every_rejection_code_has_a_documented_client_or_retry_status(spec: dict[str, Any]) -> None:
    documented = set(spec["paths"]["/execution/asset-events/emit"]["post"]["responses"])
    assert set(REJECTION_STATUS) == set(ErrorCode)
    assert {str(status) for status in REJECTION_STATUS.values()} <= documented


def test_the_seed_state_paths_are_deprecated_aliases_and_the_store_paths_are_not(spec: dict[str, Any]) -> None:
    for path, ops in spec["paths"].items():
        for op in ops.values():
            if path.startswith("/execution/state/"):
                assert op.get("deprecated") is True, path
            elif path.startswith("/execution/store/"):
                assert not op.get("deprecated"), path
