"""assetbus authenticates to Airflow with a static bearer token alone (`ASSETBUS_AIRFLOW_TOKEN`), as a platform
that hands out API tokens would have it: a JWT issued by Airflow's own auth manager (`POST /auth/token`, done
here as the platform would), and no user name or password.

With it, `assetbus airflow sync` reads Airflow's assets, and the token endpoint's attempt check asks Airflow
about DAG runs. A token Airflow refuses is one clear error, not a retry loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.infra.errors import InfraError
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import second_api

REFUSED = "the Airflow token was refused: expired or revoked"


def _only(token: str, **more: str) -> dict[str, str]:
    """The stack's environment with the Airflow token as the only credential."""
    return {"ASSETBUS_AIRFLOW_TOKEN": token, "ASSETBUS_AIRFLOW_PASSWORD": "", "ASSETBUS_AIRFLOW_USERNAME": "",
            **more}


@pytest.fixture(scope="module")
def platform_token(airflow_stack: AirflowStack) -> str:
    return airflow_stack.airflow.token()  # Airflow's auth manager issues it; assetbus never sees a password


def _api(stack: AirflowStack, name: str, token: str) -> Iterator[str]:
    yield from second_api(stack, name, **_only(token))


@pytest.fixture(scope="module")
def token_api(airflow_stack: AirflowStack, platform_token: str) -> Iterator[str]:
    """A second assetbus API (the Airflow minter) whose only Airflow credential is the static token."""
    yield from _api(airflow_stack, "api-static-token", platform_token)


def _ask(api_url: str, stack: AirflowStack, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{api_url}/airflow/tokens", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {stack.worker_credential}"})


def test_airflow_sync_works_with_only_a_static_token(airflow_stack: AirflowStack, platform_token: str) -> None:
    # exit 1 names the DAG tagged `assetbus` that the tests keep without a rule (declared_weekly_fan_out)
    printed = airflow_stack.cli_exiting((0, 1), "airflow", "sync", **_only(platform_token))
    assert "not synced" not in printed
    assert "airflow sync from" in printed and "airflow_demo.checkpoints" in printed


def test_the_attempt_check_asks_airflow_with_only_a_static_token(
        token_api: str, airflow_stack: AirflowStack, airflow_api: AirflowApi) -> None:
    run_id = f"static-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger("asset_state_intruder", run_id)
    airflow_api.wait_run("asset_state_intruder", run_id, timeout_s=240)
    answer = _ask(token_api, airflow_stack, {"kind": "dag", "dag_id": "asset_state_intruder", "run_id": run_id})
    assert answer.status_code == 200, answer.text  # Airflow vouched for the run, asked with the token
    assert answer.json()["token"]
    unknown = _ask(token_api, airflow_stack, {"kind": "dag", "dag_id": "asset_state_intruder",
                                              "run_id": "scheduled__2020-01-01T00:00:00+00:00"})
    assert unknown.status_code == 403 and unknown.json()["code"] == "attempt_not_running", unknown.text


def test_a_refused_static_token_is_one_clear_error(airflow_stack: AirflowStack, platform_token: str) -> None:
    revoked = platform_token[:-4] + ("AAAA" if not platform_token.endswith("AAAA") else "BBBB")
    with pytest.raises(InfraError) as raised:
        airflow_stack.cli("airflow", "sync", **_only(revoked))
    assert REFUSED in str(raised.value)
    assert revoked not in str(raised.value)
    for url in _api(airflow_stack, "api-revoked-token", revoked):
        answer = _ask(url, airflow_stack, {"kind": "dag", "dag_id": "asset_state_intruder", "run_id": "r"})
        assert answer.status_code == 503 and REFUSED in answer.text, answer.text
