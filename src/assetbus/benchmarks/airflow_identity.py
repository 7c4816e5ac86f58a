"""A task's first `emit()` in each identity mode, in one Airflow, runs alternating (`--first-emits N`).

`attested`: the task's token comes through Airflow's task_state_store (supervisor → api-server →
`AssetbusStoreBackend` → the stack's minter). `credential`: the worker credential asks a second minter, in
`credential` mode (`ASSETBUS_API_AIRFLOW_IDENTITY=credential`), named by the Airflow connection
`assetbus_credential`, which asks Airflow's REST API whether the attempt runs. Each sample is the task's own
clock around its first `emit()` (token, Kafka, receipt); runs alternate between the modes, so that the
machine's load falls on both alike.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from assetbus.benchmarks.airflow_paths import AirflowPaths
from assetbus.infra.airflow import airflow_bin
from assetbus.infra.ports import free_port

FIRST_EMIT_DAG = "bench_first_emit"
CREDENTIAL_CONN = "assetbus_credential"
MODES = ("credential", "attested")
WARMUP_RUNS = 2


async def _healthy(url: str) -> bool | None:
    async with httpx.AsyncClient(timeout=2) as http:
        return True if (await http.get(f"{url}/healthz")).status_code == 200 else None


async def _credential_minter(paths: AirflowPaths) -> None:
    """A second minter, in credential mode, and the Airflow connection that names it."""
    stack, port = paths.stack, free_port()
    paths.services["api-credential"] = stack.service("api-credential", "api", ASSETBUS_API_PORT=str(port),
                                                     ASSETBUS_API_AIRFLOW_IDENTITY="credential")
    url = f"http://127.0.0.1:{port}"
    await paths.wait("the credential-mode minter", lambda: _healthy(url))
    connection = json.dumps({"conn_type": "assetbus", "host": url, "password": stack.worker_credential})
    done = await asyncio.to_thread(subprocess.run, [str(airflow_bin()), "connections", "add", CREDENTIAL_CONN,
                                                    "--conn-json", connection], env=stack.airflow.env(),
                                   capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cannot add the connection {CREDENTIAL_CONN}: {done.stderr[-500:]}")


async def first_emits(paths: AirflowPaths, samples: int, progress: Callable[[str], None]) -> dict[str, list[float]]:
    """`samples` first emits (ms) per mode, after WARMUP_RUNS runs that are not counted."""
    await _credential_minter(paths)
    (await paths.http.patch(f"/dags/{FIRST_EMIT_DAG}", json={"is_paused": False})).raise_for_status()
    found: dict[str, list[float]] = {mode: [] for mode in MODES}
    total = WARMUP_RUNS + 2 * samples
    for i in range(total):
        mode = MODES[i % 2]
        run_id = f"first-{mode}-{i}-{uuid.uuid4().hex[:6]}"
        conf: dict[str, Any] = {"identity": mode, "conn_id": CREDENTIAL_CONN if mode == "credential" else None}
        (await paths.http.post(f"/dags/{FIRST_EMIT_DAG}/dagRuns",
                               json={"dag_run_id": run_id, "logical_date": None, "conf": conf})).raise_for_status()

        async def finished(run_id: str = run_id) -> dict[str, Any] | None:
            run: dict[str, Any] = await paths.get(f"/dags/{FIRST_EMIT_DAG}/dagRuns/{run_id}")
            return run if run["state"] in ("success", "failed") else None

        run = await paths.wait(f"run {run_id}", finished, every_s=0.2)
        if run["state"] != "success":
            raise RuntimeError(f"{FIRST_EMIT_DAG} run {run_id} ({mode}) failed: see the task's log")
        entry = await paths.get(f"/dags/{FIRST_EMIT_DAG}/dagRuns/{run_id}/taskInstances/first_emit/xcomEntries/"
                                "return_value")
        if i >= WARMUP_RUNS:
            found[mode].append(float(entry["value"]))
        progress(f"  first emit() {i + 1}/{total} ({mode}): {float(entry['value']):,.1f} ms")
    paths.stop_service("api-credential")
    return found
