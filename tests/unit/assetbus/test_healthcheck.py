"""The image's health check asks the probe port of the role its container runs (not the API's in every role)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from assetbus.cli.options import env_name
from assetbus.consumers.airflow.config import BridgeConfig, ForwarderConfig
from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.healthcheck import PORT_SETTINGS, Target, check, container_command, target


def test_the_port_variables_are_the_settings_models_own() -> None:
    assert PORT_SETTINGS == {
        "persister": ("--metrics-port", env_name(PersisterConfig, "metrics_port")),
        "scheduler": ("--metrics-port", env_name(SchedulerConfig, "metrics_port")),
        "api": ("--port", env_name(ApiConfig, "port")),
        "airflow-bridge": ("--metrics-port", env_name(BridgeConfig, "metrics_port")),
        "airflow-forwarder": ("--metrics-port", env_name(ForwarderConfig, "metrics_port")),
    }
    assert ApiConfig.model_fields["port"].default == 8321


@pytest.mark.parametrize(("argv", "environ", "url"), [
    (["python", "/usr/local/bin/assetbus", "run", "persister", "--metrics-port", "9464"], {},
     "http://127.0.0.1:9464/readyz"),
    (["assetbus", "run", "scheduler", "--metrics-port=9465"], {}, "http://127.0.0.1:9465/readyz"),
    (["assetbus", "run", "scheduler"], {"ASSETBUS_SCHEDULER_METRICS_PORT": "9475"}, "http://127.0.0.1:9475/readyz"),
    (["assetbus", "run", "api", "--host", "0.0.0.0", "--port", "8321"], {}, "http://127.0.0.1:8321/readyz"),
    (["assetbus", "run", "api"], {}, "http://127.0.0.1:8321/readyz"),
    (["assetbus", "run", "api"], {"ASSETBUS_API_PORT": "9000"}, "http://127.0.0.1:9000/readyz"),
    (["/sbin/docker-init", "--", "assetbus", "run", "airflow-bridge"], {"ASSETBUS_BRIDGE_METRICS_PORT": "9466"},
     "http://127.0.0.1:9466/readyz"),
    (["assetbus", "run", "airflow-forwarder", "--metrics-port", "9467"], {}, "http://127.0.0.1:9467/readyz"),
])
def test_each_role_is_asked_on_its_own_port(argv: list[str], environ: dict[str, str], url: str) -> None:
    assert target(argv, environ).url == url


@pytest.mark.parametrize("argv", [["assetbus", "migrate"], ["assetbus", "run", "persister"], ["assetbus", "demo"]])
def test_a_one_shot_command_or_a_service_without_probes_has_nothing_to_ask(argv: list[str]) -> None:
    found = target(argv, {})
    assert found.url is None
    assert check(found) == (True, f"{found.role}: {found.reason}")


class _Probe(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/readyz" else 404)
        self.end_headers()
        self.wfile.write(b'{"status": "not_ready"}')

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def probe_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _Probe)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    server.server_close()


def test_ready_is_healthy_and_not_ready_or_silent_is_not(probe_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    found = Target("persister", f"http://127.0.0.1:{probe_port}/readyz")
    assert check(found)[0] is True
    monkeypatch.setattr(_Probe, "status", 503)
    healthy, seen = check(found)
    assert not healthy and "503" in seen and "not_ready" in seen
    closed = Target("scheduler", "http://127.0.0.1:9/readyz")
    assert check(closed, timeout_s=1)[0] is False


def test_the_container_command_is_pid_ones(tmp_path: Path) -> None:
    cmdline = tmp_path / "cmdline"
    cmdline.write_bytes(b"/usr/local/bin/python\0/usr/local/bin/assetbus\0run\0persister\0")
    assert container_command(cmdline) == ["/usr/local/bin/python", "/usr/local/bin/assetbus", "run", "persister"]
