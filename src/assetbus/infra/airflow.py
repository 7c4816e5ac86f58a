"""A local Apache Airflow 3 for tests and benchmarks: api-server, scheduler and dag-processor.

Airflow lives in its own virtualenv (`make airflow-venv` → `.venv-airflow/`, with the assetbus SDK).
`LocalAirflow.stop()` ends the processes it started (their process groups) and nothing else.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from assetbus.infra.databases import airflow_metadata_url, create_database, drop_database
from assetbus.infra.errors import InfraError
from assetbus.infra.ports import free_port
from assetbus.infra.state import wait_until
from assetbus.producers.kafka.periodic import run_async
from assetbus.settings import Settings

REPO = Path(__file__).resolve().parents[3]
AIRFLOW_VENV = Path(os.environ.get("ASSETBUS_AIRFLOW_VENV", REPO / ".venv-airflow"))
USERNAME = "assetbus"
VIEWER = "viewer"
"""A second account with Airflow's read-only role: what any reader of the deployment's Airflow can see."""
COMPONENTS = ("api-server", "scheduler", "dag-processor")
SQLITE, POSTGRES = "sqlite", "postgres"
METADATA_DATABASES = (SQLITE, POSTGRES)


def airflow_bin(venv: Path = AIRFLOW_VENV) -> Path:
    binary = venv / "bin" / "airflow"
    if not binary.exists():
        raise InfraError(f"no Airflow at {binary}: run `make airflow-venv` (apache-airflow 3.3 in its own venv)")
    return binary


def spawn(args: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start `args` in a process group of its own (`stop_group` ends its children too), appending to `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(args, env=env, stdout=out, stderr=out, start_new_session=True)


def stop_group(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Send `sig` to the process group of a `spawn`ed process that still runs, and wait: SIGKILL after 20 s."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, sig)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for(condition: Callable[[], bool], processes: Mapping[str, subprocess.Popen[bytes]], timeout_s: float,
             what: str, exited: Callable[[str, int], str]) -> None:
    """Poll `condition` every 0.5 s (an HTTP error or an unreadable answer is a no) until it holds; InfraError
    with `exited(name, returncode)` when one of `processes` exits first, or after `timeout_s`."""
    def ready() -> bool:
        for name, process in processes.items():
            if process.poll() is not None:
                raise InfraError(exited(name, process.returncode))
        try:
            return condition()
        except (httpx.HTTPError, ValueError):
            return False

    if not wait_until(ready, timeout_s, interval=0.5):
        raise InfraError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def postgres_driver_missing(venv: Path = AIRFLOW_VENV) -> str | None:
    """None when Airflow's venv can reach a PostgreSQL metadata DB (psycopg2 for its sync engine, asyncpg for
    its async one), else why not."""
    python = venv / "bin" / "python"
    if not python.exists():
        return f"no Airflow venv at {venv}: run `make airflow-venv`"
    done = subprocess.run([str(python), "-c", "import psycopg2, asyncpg"], capture_output=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        return (f"Airflow's venv {venv} has no PostgreSQL driver (psycopg2, asyncpg): run `make airflow-venv` "
                "(it installs apache-airflow[postgres])")
    return None


@dataclass
class LocalAirflow:
    """One Airflow installation in `home`, reading DAGs from `dags_folder`: start(), then stop()."""

    home: Path
    dags_folder: Path
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """More environment for every component (the workers and the dag-processor included)."""
    component_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """More environment for one component only (the state store backend's key for the api-server, say)."""
    connections: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Airflow connections to add to the metadata DB before the components start: conn id → its JSON
    (`airflow connections add --conn-json`). Workers read them through Airflow's execution API."""
    port: int = field(default_factory=free_port)
    password: str = field(default_factory=lambda: secrets.token_urlsafe(16), repr=False)
    viewer_password: str = field(default_factory=lambda: secrets.token_urlsafe(16), repr=False)
    venv: Path = AIRFLOW_VENV
    jwt_secret: str = field(default_factory=lambda: secrets.token_urlsafe(48), repr=False)
    metadata: str = SQLITE
    """Airflow's metadata DB: `"sqlite"` (a file in `home`: nothing to create) or `"postgres"` (`metadata_database`
    on `postgres_server`, created by `launch()`, dropped by `stop()`): what production runs, and what lets Airflow's
    API server and scheduler write at once."""
    postgres_server: str | None = field(default=None, repr=False)
    """A URL of the PostgreSQL server for `"postgres"` (any database on it; its role needs CREATEDB); None:
    assetbus's `DATABASE_URL` (or the local infrastructure's)."""
    metadata_database: str = field(default_factory=lambda: f"airflow_{secrets.token_hex(6)}")
    username: str = field(default=USERNAME, init=False)
    _database_created: bool = field(default=False, repr=False)
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metadata_url(self) -> str:
        """The SQLAlchemy URL of Airflow's metadata DB (what `[database] sql_alchemy_conn` is set to)."""
        if self.metadata == SQLITE:
            return f"sqlite:///{self.home / 'airflow.db'}"
        return airflow_metadata_url(self._server(), self.metadata_database).render_as_string(hide_password=False)

    def _server(self) -> str:
        if self.postgres_server is None:
            self.postgres_server = Settings().database_url
        return self.postgres_server

    def token(self, username: str = USERNAME) -> str:
        """A JWT of Airflow's REST API for one of its accounts (the service account, or `VIEWER`)."""
        password = self.viewer_password if username == VIEWER else self.password
        response = httpx.post(f"{self.url}/auth/token", json={"username": username, "password": password})
        response.raise_for_status()
        return str(response.json()["access_token"])

    def env(self) -> dict[str, str]:
        home = self.home
        # Workers get no assetbus secret, no database and no assetbus environment: the Airflow connection
        # assetbus_default (in `connections`) tells them the API and holds their worker credential.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHONPATH", "ASSETBUS_", "DATABASE_URL"))}
        env.update({
            "AIRFLOW_HOME": str(home),
            "PATH": f"{self.venv / 'bin'}:{env.get('PATH', '')}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__AUTH_MANAGER":
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin,{VIEWER}:viewer",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.metadata_url,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": self.jwt_secret,
            "AIRFLOW__API_AUTH__JWT_EXPIRATION_TIME": "3600",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # a new or changed DAG file is parsed at the next refresh (Airflow queues it first); an unchanged one is
            # parsed again only every 10 minutes, not every 30 s (a process per file: a sixth of a core, idle)
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2",
            # two shared cores (and SQLite): the API server can be slow to answer a worker (default 5 s)
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__CORE__DAG_DISCOVERY_SAFE_MODE": "True",
        })
        if self.metadata == POSTGRES and (tls := make_url(self.metadata_url).query.get("sslmode")):
            # Airflow derives its async URL from the sync one, query included; asyncpg calls it `ssl`
            async_url = make_url(self.metadata_url).set(drivername="postgresql+asyncpg", query={"ssl": tls})
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"] = async_url.render_as_string(hide_password=False)
        env.update(self.extra_env)
        return env

    def _airflow(self, *args: str) -> None:
        done = subprocess.run([str(airflow_bin(self.venv)), *args], env=self.env(), capture_output=True, timeout=600,
                              check=False)
        if done.returncode != 0:
            raise InfraError(f"`airflow {' '.join(args)}` failed ({done.returncode}): "
                             f"{done.stderr.decode(errors='replace')[-2000:]}")

    def launch(self) -> None:
        """Create (PostgreSQL) and migrate the metadata DB and start the processes, without waiting for them
        to be healthy."""
        if self.metadata not in METADATA_DATABASES:
            raise InfraError(f"Airflow's metadata DB is one of {', '.join(METADATA_DATABASES)}, not {self.metadata!r}")
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "passwords.json").write_text(json.dumps({USERNAME: self.password, VIEWER: self.viewer_password}))
        try:
            if self.metadata == POSTGRES:
                self._create_database()
            self._airflow("db", "migrate")
            for conn_id, definition in self.connections.items():
                self._airflow("connections", "add", conn_id, "--conn-json", definition)
            for component in COMPONENTS:
                args = [str(airflow_bin(self.venv)), component]
                if component == "api-server":
                    args += ["--port", str(self.port), "--host", "127.0.0.1"]
                env = {**self.env(), **self.component_env.get(component, {})}
                self._processes[component] = spawn(args, env, self.home / f"{component}.log")
        except BaseException:
            self.stop()
            raise

    def wait_healthy(self, timeout_s: float) -> None:
        def healthy() -> bool:
            health = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=2).json()
            return all(health.get(part, {}).get("status") == "healthy" for part in ("scheduler", "dag_processor"))

        wait_for(healthy, self._processes, timeout_s, f"Airflow at {self.url} (logs: {self.home}/*.log)",
                 lambda name, code: f"Airflow's {name} exited ({code}); see {self.home}/{name}.log")

    def stop(self) -> None:
        """End the processes, then drop the PostgreSQL metadata database that `launch()` created."""
        try:
            for process in self._processes.values():  # all at once, then each waited for (or killed)
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
            for process in self._processes.values():
                stop_group(process)
            self._processes.clear()
        finally:
            if self._database_created:
                run_async(drop_database(self._server(), self.metadata_database))
                self._database_created = False

    def _create_database(self) -> None:
        if self._database_created:
            return
        if problem := postgres_driver_missing(self.venv):
            raise InfraError(problem)
        run_async(create_database(self._server(), self.metadata_database))
        self._database_created = True
