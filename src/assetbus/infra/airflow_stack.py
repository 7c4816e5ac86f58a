"""Airflow next to a running assetbus, as separate real processes: for the Airflow tests and benchmark.

`AirflowStack.start()` starts them in order; bridges are started (and killed) on demand; `stop()` ends what it started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from assetbus.infra.airflow import LocalAirflow, airflow_bin, spawn, stop_group, wait_for
from assetbus.infra.errors import InfraError
from assetbus.infra.ports import free_port
from assetbus.producers.airflow.connection import CONN_ID

CLI = Path(sys.executable).parent / "assetbus"
STATE_STORE_BACKEND = "assetbus.producers.airflow.store_backend.AssetbusStoreBackend"
STATE_PLUGIN = Path(__file__).resolve().parents[3] / "examples" / "airflow" / "plugins" / "assetbus_state.py"
"""The plugin that tells the backend which task asks for asset state (its root middleware)."""
TRIGGERER_CONN_ID = "assetbus_triggerer"
"""The connection the test DAGs' assetbus triggers and sensors read Kafka and the topic prefix from."""
TRIGGERER = "airflow/triggerer"
"""Airflow's triggerer among the stack's services (its log: the Airflow home's triggerer.log)."""


@dataclass(kw_only=True)
class AirflowStack:
    home: Path
    dags_folder: Path
    bootstrap_servers: str
    database_url: str
    topic_prefix: str
    token_secret: str = field(repr=False)
    dag_ids: Sequence[str] = ()
    """Airflow DAGs that must be parsed before assets and readiness rules are synced."""
    consumer_definitions: Path | None = None
    """A file or folder of `ConsumerDag` definitions for `assetbus dags sync`; None: every rule comes from
    the DAGs Airflow tags `assetbus`."""
    service_env: Mapping[str, str] = field(default_factory=dict)
    """More environment for assetbus's services and CLI (the minter's `ASSETBUS_API_AIRFLOW_*`, say)."""
    api_port: int = field(default_factory=free_port)
    airflow: LocalAirflow = field(init=False)
    worker_credential: str = field(init=False, default="", repr=False)
    """The Airflow workers' credential (scope `airflow:worker`), the password of their `assetbus_default`."""
    _services: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # Airflow keeps task and asset state in assetbus: the backend runs in the api-server, the one
        # component that holds the key it mints its state tokens with (workers hold none); its plugin names
        # the calling task, so asset state is open only to tasks registered with the asset
        plugins = self.home / "airflow" / "plugins"
        backend = {"AIRFLOW__STATE_STORE__BACKEND": STATE_STORE_BACKEND, "ASSETBUS_TOKEN_SECRET": self.token_secret,
                   "ASSETBUS_API_URL": self.api_url, "AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins)}
        self.airflow = LocalAirflow(self.home / "airflow", self.dags_folder, component_env={"api-server": backend})

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def metadata_url(self) -> str:
        """Airflow's metadata database, where the bridge and the sync read the DAGs' timetables (read-only)."""
        return self.airflow.metadata_url

    def env(self, **more: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"DATABASE_URL": self.database_url, "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers,
                    "ASSETBUS_TOPIC_PREFIX": self.topic_prefix, "ASSETBUS_TOKEN_SECRET": self.token_secret,
                    "ASSETBUS_API_PORT": str(self.api_port), "ASSETBUS_AIRFLOW_URL": self.airflow.url,
                    "ASSETBUS_AIRFLOW_USERNAME": self.airflow.username,
                    "ASSETBUS_AIRFLOW_PASSWORD": self.airflow.password})
        env.update(self.service_env)
        env.update(more)
        return env

    def cli(self, *args: str, **env: str) -> str:
        """Run `assetbus ARGS` against this stack; its output (InfraError if it fails)."""
        return self.cli_exiting((0,), *args, **env)

    def cli_exiting(self, ok: Sequence[int], *args: str, **env: str) -> str:
        """Run `assetbus ARGS` against this stack; its output (InfraError if it exits with a code not in `ok`)."""
        done = subprocess.run([str(CLI), *args], env=self.env(**env), capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode not in ok:
            raise InfraError(f"`assetbus {' '.join(args)}` failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done.stdout

    def service(self, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        """Start `assetbus run ARGS` as the service `name` (its log in home/NAME.log); one of that name
        still running is stopped first."""
        self.stop_service(name)
        self.home.mkdir(parents=True, exist_ok=True)
        process = self._services[name] = spawn([str(CLI), "run", *args], self.env(**env), self.home / f"{name}.log")
        return process

    def start(self, timeout_s: float = 300.0) -> None:
        try:
            plugins = self.home / "airflow" / "plugins"
            plugins.mkdir(parents=True, exist_ok=True)
            shutil.copy(STATE_PLUGIN, plugins / STATE_PLUGIN.name)
            self.worker_credential = self.cli("token", "worker").strip()
            self.airflow.connections = {CONN_ID: json.dumps({"conn_type": "assetbus", "host": self.api_url,
                                                             "password": self.worker_credential}),
                                        TRIGGERER_CONN_ID: self._triggerer_connection()}
            self.service("persister", "persister")
            self.service("api", "api")
            # the api-server checks at start that its backend can mint through this API (identity_checks.py)
            self.wait_service("api", f"{self.api_url}/healthz", timeout_s)
            self.airflow.launch()
            self._start_triggerer()
            self.airflow.wait_healthy(timeout_s)
            self._wait(self._dags_parsed, timeout_s, f"Airflow to parse {', '.join(self.dag_ids)}")
            self.sync_from_airflow()
            if self.consumer_definitions is not None:
                self.cli("dags", "sync", str(self.consumer_definitions))
            self.service("scheduler", "scheduler")
        except BaseException:
            self.stop()
            raise

    def sync_from_airflow(self) -> str:
        """`assetbus airflow sync --metadata-url`: Airflow's assets and tasks, and the rules of the DAGs tagged
        `assetbus`. A tagged DAG without a rule (one a test keeps on purpose) makes it exit 1 after writing the
        others: only an asset that could not be synced fails here."""
        out = self.cli_exiting((0, 1), "airflow", "sync", "--metadata-url", self.metadata_url, COLUMNS="300")
        if "not synced" in out:
            raise InfraError(f"`assetbus airflow sync` could not sync an asset:\n{out}")
        return out

    def _triggerer_connection(self) -> str:
        """What the triggerer's assetbus triggers read: Kafka and the topic prefix (they ask the API nothing)."""
        return json.dumps({"conn_type": "assetbus", "host": self.api_url, "extra": {
            "topic_prefix": self.topic_prefix, "kafka": {"bootstrap_servers": self.bootstrap_servers}}})

    def _start_triggerer(self, env: Mapping[str, str] | None = None) -> None:
        """Airflow's triggerer (deferred tasks, AssetWatchers), in the Airflow venv like its other components."""
        self._services[TRIGGERER] = spawn([str(airflow_bin(self.airflow.venv)), "triggerer"],
                                          {**self.airflow.env(), **(env or {})}, self.home / f"{TRIGGERER}.log")

    def _dags_parsed(self) -> bool:
        headers = {"Authorization": f"Bearer {self.airflow.token()}"}
        dags = httpx.get(f"{self.airflow.url}/api/v2/dags", params={"limit": 1000}, headers=headers).json()
        return set(self.dag_ids) <= {dag["dag_id"] for dag in dags.get("dags", [])}

    def _wait(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        wait_for(condition, self._services, timeout_s, what,
                 lambda name, code: f"assetbus {name} exited ({code}); the end of its log:\n" + self.log_tail(name))

    def wait_service(self, name: str, url: str, timeout_s: float = 120.0) -> None:
        """Wait until the service `name` answers `url` (its `/readyz`, say) with 200; fail if it exits first."""
        self._wait(lambda: httpx.get(url, timeout=2).status_code == 200, timeout_s, f"assetbus {name} at {url}")

    def log_tail(self, name: str, chars: int = 3000) -> str:
        """The end of a log of the stack: a service's (`bridge`: home/bridge.log) or Airflow's (`airflow/scheduler`)."""
        path = self.home / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else f"(no {path})"

    def stop_service(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop one service (kill -9 with sig=SIGKILL) and wait for it."""
        process = self._services.pop(name, None)
        if process is not None:
            stop_group(process, sig)

    def stop(self) -> None:
        try:
            for name in list(self._services):
                self.stop_service(name)
        finally:
            self.airflow.stop()
