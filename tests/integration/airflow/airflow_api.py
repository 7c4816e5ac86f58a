"""What the Airflow tests ask Airflow's REST API (sync httpx, the stack's service account)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

import httpx

from assetbus.infra.airflow_stack import AirflowStack


class AirflowApi:
    def __init__(self, stack: AirflowStack) -> None:
        self.stack = stack
        self._http = httpx.Client(base_url=f"{stack.airflow.url}/api/v2", timeout=60)
        self._http.headers["Authorization"] = f"Bearer {stack.airflow.token()}"

    def get(self, path: str, **params: Any) -> Any:
        response = self._http.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create the run. The stack's metadata DB is SQLite, one writer at a time: under load a scheduler
        transaction can hold it past sqlite3's 5 s busy timeout, and the API server answers 500 ("database is
        locked", rolled back). That answer is retried, twice; a retry that finds the run made (409) returns it."""
        body = {"dag_run_id": run_id, "logical_date": None, "conf": conf or {}}
        for attempt in range(3):
            response = self._http.post(f"/dags/{dag_id}/dagRuns", json=body)
            if response.status_code == 409 and attempt:
                result: dict[str, Any] = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")
                return result
            if response.status_code != 500 or attempt == 2:
                break
        response.raise_for_status()
        result = response.json()
        return result

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = self.get(f"/dags/{dag_id}/dagRuns", limit=1000)["dag_runs"]
        return runs

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")
        return result

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        return self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
                        f"/xcomEntries/{key}")["value"]

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}")
        return result

    def add_connection(self, conn_id: str, definition: dict[str, Any]) -> None:
        """An Airflow connection, as `airflow connections add CONN_ID --conn-json DEFINITION` adds it (without
        an Airflow CLI process: a few seconds of a core each)."""
        body = {"connection_id": conn_id, **definition}
        if isinstance(body.get("extra"), dict):
            body["extra"] = json.dumps(body["extra"])
        response = self._http.post("/connections", json=body)
        assert response.status_code == 201, response.text

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self._http.patch(f"/dags/{dag_id}", json={"is_paused": paused}).raise_for_status()

    def wait_run(self, dag_id: str, run_id: str, states: tuple[str, ...] = ("success", "failed"),
                 timeout_s: float = 180.0) -> dict[str, Any]:
        """Poll until the run is in one of `states` (a condition, not a sleep)."""
        deadline = time.monotonic() + timeout_s
        state = "unknown"
        while True:
            try:
                run = self.run(dag_id, run_id)
                state = run["state"]
                if state in states:
                    return run
            except httpx.TimeoutException:  # a busy SQLite-backed API server: ask again
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"run {dag_id}/{run_id} is {state} after {timeout_s}s, not {states}")
            time.sleep(1.0)

    def close(self) -> None:
        self._http.close()
