"""The state store routes match Airflow 3.3.2's execution API (checked against a table copied from
`airflow/api_fastapi/execution_api/routes/{task,asset}_state_store.py` and their datamodels; nothing
is imported from Airflow)."""

from __future__ import annotations

from typing import Any

import pytest

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.producers.kafka.connection import KafkaConnection

TI_KEY = "/execution/store/ti/{task_instance_id}/{key}"
TI_CLEAR = "/execution/store/ti/{task_instance_id}"

# (method, path, success status, query parameters Airflow requires, request body fields (required, optional))
AIRFLOW_3_3_2: list[tuple[str, str, int, set[str], tuple[set[str], set[str]] | None]] = [
    ("GET", TI_KEY, 200, set(), None),
    ("PUT", TI_KEY, 204, set(), ({"value"}, {"expires_at"})),
    ("DELETE", TI_KEY, 204, set(), None),
    ("DELETE", TI_CLEAR, 204, set(), None),
    *((method, f"/execution/store/asset/by-{by}/value", status, {by, "key"}, body)
      for by in ("name", "uri")
      for method, status, body in (("GET", 200, None), ("PUT", 204, ({"value"}, set())), ("DELETE", 204, None))),
    ("DELETE", "/execution/store/asset/by-name/clear", 204, {"name"}, None),
    ("DELETE", "/execution/store/asset/by-uri/clear", 204, {"uri"}, None),
]


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    app = create_api(ApiConfig(kafka=KafkaConnection(bootstrap_servers=("unused:9092",)),
                               database_url="postgresql+asyncpg://u@h/db", token_secret="unused"))
    return app.openapi()


def _schema(spec: dict[str, Any], ref_or_schema: dict[str, Any]) -> dict[str, Any]:
    ref = ref_or_schema.get("$ref")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else ref_or_schema


@pytest.mark.parametrize(("method", "path", "status", "query", "body"), AIRFLOW_3_3_2,
                         ids=[f"{m} {p}" for m, p, *_ in AIRFLOW_3_3_2])
def test_each_airflow_store_route_exists_with_its_status_parameters_and_body(
        spec: dict[str, Any], method: str, path: str, status: int, query: set[str],
        body: tuple[set[str], set[str]] | None) -> None:
    op = spec["paths"][path][method.lower()]
    success = {int(code) for code in op["responses"] if code.startswith("2")}
    assert success == {status}
    required_query = {p["name"] for p in op["parameters"] if p["in"] == "query" and p.get("required")}
    assert required_query == query
    if status == 204:
        assert "content" not in op["responses"]["204"]
    if body is not None:
        schema = _schema(spec, op["requestBody"]["content"]["application/json"]["schema"])
        required, optional = body
        assert set(schema.get("required", [])) == required
        assert set(schema["properties"]) == required | optional
        assert schema.get("additionalProperties") is False
    if method == "GET":
        out = _schema(spec, op["responses"]["200"]["content"]["application/json"]["schema"])
        assert set(out["properties"]) == {"value"} and out["required"] == ["value"]


def test_errors_of_the_store_routes_are_shaped_detail_reason_message(spec: dict[str, Any]) -> None:
    for method, path, *_ in AIRFLOW_3_3_2:
        for code in ("401", "403", "422"):
            error = _schema(spec, spec["paths"][path][method.lower()]["responses"][code]["content"]
                            ["application/json"]["schema"])
            detail = _schema(spec, error["properties"]["detail"])
            assert {"reason", "message"} <= set(detail["required"])


def test_clear_needs_no_parameter_airflow_lacks_and_all_map_indices_is_a_scoped_extension(
        spec: dict[str, Any]) -> None:
    # Airflow 3.3.2's execution API clear takes no query parameter at all; `all_map_indices` is on its core
    # REST API only, behind DAG permissions. Here it is an optional extension that needs scope `ti:mapped`.
    params = {p["name"]: p for p in spec["paths"][TI_CLEAR]["delete"]["parameters"] if p["in"] == "query"}
    assert set(params) == {"all_map_indices"} and not params["all_map_indices"].get("required")
    assert "ti:mapped" in params["all_map_indices"]["description"]
