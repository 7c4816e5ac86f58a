"""The sign-in recipes of docs/airflow.md ("Managed Airflow") that can run here: `TokenFile`
(`examples/airflow/managed_auth.py`) signs `assetbus airflow sync` in to a real Airflow 3.3.2 with a token it
reads from a file at every request, so a rotated file is picked up without a restart."""

from __future__ import annotations

import subprocess
from pathlib import Path

from assetbus.infra.airflow_stack import CLI, AirflowStack

REPO = Path(__file__).resolve().parents[3]


def test_a_token_file_signs_the_sync_in_and_a_rewritten_file_is_read_at_the_next_request(
        airflow_stack: AirflowStack, tmp_path: Path) -> None:
    token_file = tmp_path / "airflow-token"
    token_file.write_text(airflow_stack.airflow.token() + "\n")  # as the platform (a sidecar) would write it
    env = airflow_stack.env(ASSETBUS_AIRFLOW_AUTH="examples.airflow.managed_auth:TokenFile",
                            AIRFLOW_TOKEN_FILE=str(token_file), ASSETBUS_AIRFLOW_PASSWORD="",
                            ASSETBUS_AIRFLOW_USERNAME="", PYTHONPATH=str(REPO), COLUMNS="300")

    def sync() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLI), "airflow", "sync"], env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    signed_in = sync()
    assert f"airflow sync from {airflow_stack.airflow.url}" in signed_in.stdout, signed_in.stdout + signed_in.stderr
    assert "declared_daily_clicks" in signed_in.stdout  # it listed Airflow's DAGs tagged assetbus
    token_file.write_text("revoked")
    refused = sync()
    assert refused.returncode != 0
    assert "Airflow answered 40" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
