"""`assetbus airflow sync` (as every Airflow-facing service) takes exactly one way to authenticate to Airflow,
and says in one line which setting is missing, conflicting or broken, before it asks Airflow anything."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assetbus.cli.main import app

SETTINGS = ("ASSETBUS_AIRFLOW_PASSWORD", "ASSETBUS_AIRFLOW_TOKEN", "ASSETBUS_AIRFLOW_AUTH", "ASSETBUS_AIRFLOW_USERNAME")


@pytest.fixture(autouse=True)
def airflow_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_AIRFLOW_URL", "http://127.0.0.1:9")  # nothing listens: never reached here
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def _sync_error(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["airflow", "sync"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_no_credentials_names_the_three_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _sync_error(monkeypatch)
    assert all(name in line for name in ("ASSETBUS_AIRFLOW_PASSWORD", "ASSETBUS_AIRFLOW_TOKEN",
                                         "ASSETBUS_AIRFLOW_AUTH"))


def test_a_password_and_a_token_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _sync_error(monkeypatch, ASSETBUS_AIRFLOW_PASSWORD="pw", ASSETBUS_AIRFLOW_TOKEN="jwt")
    assert "conflicting" in line and "ASSETBUS_AIRFLOW_PASSWORD and ASSETBUS_AIRFLOW_TOKEN" in line
    assert "jwt" not in line.replace("ASSETBUS", "")


def test_a_token_and_an_auth_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _sync_error(monkeypatch, ASSETBUS_AIRFLOW_TOKEN="jwt", ASSETBUS_AIRFLOW_AUTH="httpx:BasicAuth")
    assert "ASSETBUS_AIRFLOW_TOKEN and ASSETBUS_AIRFLOW_AUTH" in line


def test_a_bad_import_path_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _sync_error(monkeypatch, ASSETBUS_AIRFLOW_AUTH="assetbus_no_such_module:Auth")
    assert line.startswith("error: ASSETBUS_AIRFLOW_AUTH='assetbus_no_such_module:Auth': cannot import")


def test_a_token_alone_reaches_airflow(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _sync_error(monkeypatch, ASSETBUS_AIRFLOW_TOKEN="jwt")  # nothing listens at the URL
    assert "did not answer" in line
