"""docker-compose.yml validates without an engine and runs the launcher's Kafka version."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assetbus.settings import InfraSettings
from tests.helpers import exported_metric_names

COMPOSE = Path(__file__).resolve().parents[3] / "docker-compose.yml"


def test_compose_file_validates() -> None:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is not installed; `make test` installs Debian's package (compose-check)")
    env = {**os.environ, "ASSETBUS_TOKEN_SECRET": "validation-only"}
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "-q"], env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_compose_kafka_is_the_launchers_version() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert services["kafka"]["image"] == f"apache/kafka:{InfraSettings().kafka_version}"


DEPLOY = COMPOSE.parent / "deploy"


def test_prometheus_scrapes_every_service_where_it_serves_metrics() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {job["job_name"]: job["static_configs"][0]["targets"][0] for job in config["scrape_configs"]}
    assert set(targets) == {"persister", "scheduler", "api"}
    for job, target in targets.items():
        host, port = target.split(":")
        assert host == job and host in services
        command = services[job]["command"]
        assert ("--metrics-port" in command and command[command.index("--metrics-port") + 1] == port) or \
            (job == "api" and command[command.index("--port") + 1] == port)
        assert port in services[job]["healthcheck"]["test"][-1] and services[job]["healthcheck"]["test"][-1].endswith(
            "/readyz")
    volumes = services["prometheus"]["volumes"]
    assert "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in volumes


def test_grafana_is_provisioned_with_the_dashboard_and_every_panel_queries_a_metric_we_export() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    mounts = {volume.split(":")[0]: volume.split(":")[1] for volume in services["grafana"]["volumes"]}
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    provider = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "dashboards" / "assetbus.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == mounts["./deploy/grafana/dashboards"]
    datasource = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "assetbus.json").read_text())
    (variable,) = dashboard["templating"]["list"]  # any Prometheus of the importing Grafana; the provisioned one first
    assert (variable["name"], variable["type"], variable["query"]) == ("datasource", "datasource", "prometheus")
    assert variable["current"]["value"] == uid
    exported = exported_metric_names()
    queried: dict[str, set[str]] = {}
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
            queried.setdefault(panel["title"], set()).update(re.findall(r"assetbus_[a-z_]+", target["expr"]))
    everything = set().union(*queried.values())
    assert everything - exported == set()
    for wanted in ("assetbus_persister_accepted_total", "assetbus_scheduler_readiness_latency_seconds_bucket",
                   "assetbus_scheduler_runs_created_total", "assetbus_consumer_group_lag",
                   "assetbus_persister_db_commit_seconds_bucket", "assetbus_persister_dead_lettered_total",
                   "assetbus_dead_letters_total", "assetbus_kafka_access_denied"):
        assert wanted in everything
    for service in ("bridge", "forwarder"):  # each has panels of its own, on its own metrics
        own = {title: names for title, names in queried.items() if title.lower().startswith(service)}
        assert len(own) >= 2 and all(any(service in name or "subscriber" in name for name in names)
                                     for names in own.values()), own


def test_the_compose_api_can_mint_the_operator_token_its_page_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ui.md: `docker compose exec api assetbus token operator` gives the token that signs in to /ui."""
    from typer.testing import CliRunner

    from assetbus.cli.main import app
    from assetbus.consumers.api.ui_auth import SCOPE_UI_READ, operator_of
    from assetbus.consumers.auth import TokenVerifier

    environment = yaml.safe_load(COMPOSE.read_text())["services"]["api"]["environment"]
    # the API verifies with the secret the `exec`'d CLI mints with: the container's own environment
    assert str(environment["ASSETBUS_TOKEN_SECRET"]).startswith("${ASSETBUS_TOKEN_SECRET:?")
    assert "ASSETBUS_TOKEN_JWKS" not in environment and "ASSETBUS_TOKEN_SIGNING_KEY" not in environment
    secret = "a-compose-secret-of-at-least-32-bytes"
    monkeypatch.setenv("ASSETBUS_TOKEN_SECRET", secret)
    monkeypatch.delenv("ASSETBUS_TOKEN_SIGNING_KEY", raising=False)
    minted = CliRunner().invoke(app, ["token", "operator", "--name", "ops"])
    assert minted.exit_code == 0, minted.output
    verifier = TokenVerifier.configured(jwks=None, secret=secret)  # as create_api builds it
    assert operator_of(verifier, minted.output.strip()).scopes == {SCOPE_UI_READ}
