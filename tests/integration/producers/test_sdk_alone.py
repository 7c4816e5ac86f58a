"""The task-side SDK installs alone, on the oldest Python it supports, and emits through the real pipeline.

The wheels of all three distributions are built and inspected (nothing but `assetbus/` at their top
level); a fresh venv gets only `assetbus-schemas` and `assetbus-sdk`; `pip list` there names none of
the server libraries; and a task in that venv emits against the real broker, answered by a real
persister running in this test's process.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.producers import Asset, task_token
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.integration.producers.emitted import stored_events

REPO = Path(__file__).resolve().parents[3]
DISTRIBUTIONS = {"assetbus-schemas": REPO / "schemas", "assetbus-sdk": REPO / "producers", "assetbus": REPO}
SERVER_ONLY = {"fastapi", "uvicorn", "sqlalchemy", "asyncpg", "alembic", "faststream", "typer", "rich",
               "pydantic-settings"}
OLDEST_PYTHON = "python3.10"


def _oldest_python() -> str | None:
    """A Python 3.10 that runs: on PATH, or one of pyenv's versions (its shims refuse inactive versions)."""
    candidates = [shutil.which(OLDEST_PYTHON)]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [str(p) for p in sorted(pyenv_root.glob(f"versions/3.10*/bin/{OLDEST_PYTHON}"))]
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    return None

pytestmark = pytest.mark.integration

EMIT = """
import json, sys
from assetbus.producers import Asset
receipt = Asset("orders", "s3://bucket/orders/").emit(partition_key="2026-10-01", dedupe_key="batch-1")
again = Asset("orders", "s3://bucket/orders/").emit(partition_key="2026-10-01", dedupe_key="batch-1")
print(json.dumps({"python": sys.version_info[:2], "first": receipt.model_dump(mode="json"),
                  "again": again.model_dump(mode="json")}))
"""


def _run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False,
                            timeout=600)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One wheel per distribution, built from the working tree."""
    out = tmp_path_factory.mktemp("wheels")
    built: dict[str, Path] = {}
    for name, source in DISTRIBUTIONS.items():
        _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out / name, source)
        (wheel,) = (out / name).glob("*.whl")
        built[name] = wheel
    return built


@pytest.fixture(scope="module")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Iterator[Path]:
    """A fresh venv on the SDK's oldest Python (this interpreter if that one is missing), with only the SDK."""
    python = _oldest_python() or sys.executable
    venv = tmp_path_factory.mktemp("sdk-venv") / "venv"
    _run(python, "-m", "venv", venv)
    _run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
         wheels["assetbus-schemas"], wheels["assetbus-sdk"])
    yield venv


def test_every_wheel_holds_only_the_assetbus_namespace(wheels: dict[str, Path]) -> None:
    for name, wheel in wheels.items():
        tops = {entry.split("/")[0] for entry in zipfile.ZipFile(wheel).namelist()}
        packages = {top for top in tops if not top.endswith((".dist-info", ".data"))}
        assert packages == {"assetbus"}, f"{name}: {sorted(packages)}"
        assert "assetbus/__init__.py" not in zipfile.ZipFile(wheel).namelist(), f"{name} would own the namespace"


def test_the_sdk_wheels_hold_the_contract_and_the_sdk_only(wheels: dict[str, Path]) -> None:
    portions = {name: {e.split("/")[1] for e in zipfile.ZipFile(w).namelist() if e.startswith("assetbus/")}
                for name, w in wheels.items()}
    assert portions["assetbus-schemas"] == {"schemas"}
    assert portions["assetbus-sdk"] == {"producers"}
    assert {"consumers", "migrations", "cli", "infra"} <= portions["assetbus"]
    assert not portions["assetbus"] & {"schemas", "producers"}
    for name in ("assetbus-schemas", "assetbus-sdk"):
        typed = [e for e in zipfile.ZipFile(wheels[name]).namelist() if e.endswith("py.typed")]
        assert typed, f"{name} ships no py.typed"


def test_installing_the_sdk_alone_pulls_in_no_server_library(sdk_venv: Path) -> None:
    listed = json.loads(_run(sdk_venv / "bin" / "python", "-m", "pip", "list", "--format", "json",
                             "--disable-pip-version-check"))
    names = {entry["name"].lower().replace("_", "-") for entry in listed}
    assert {"assetbus-sdk", "assetbus-schemas", "aiokafka", "pydantic", "pyjwt", "httpx"} <= names
    assert not names & SERVER_ONLY, f"server libraries in the SDK's venv: {sorted(names & SERVER_ONLY)}"
    assert "assetbus" not in names


async def test_a_task_in_the_sdk_alone_venv_emits_through_a_real_persister(
    sdk_venv: Path, infra: Settings, topics: Topics, token_secret: str, persister: Persister, engine: AsyncEngine,
    orders: Asset,
) -> None:
    token = task_token(token_secret, "ingest", "run-1", "load_orders")
    env = {"PATH": "/usr/bin:/bin", "ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix}
    out = await asyncio.to_thread(_run, sdk_venv / "bin" / "python", "-c", EMIT, cwd=sdk_venv, env=env)
    answer = json.loads(out.strip().splitlines()[-1])

    if _oldest_python():
        assert answer["python"] == [3, 10]
    assert answer["first"]["status"] == "accepted"
    assert answer["again"]["status"] == "duplicate"
    assert answer["again"]["event_id"] == answer["first"]["event_id"]
    events = await stored_events(engine)
    assert [(e["id"], e["dag_id"], e["task_id"]) for e in events] == [
        (answer["first"]["event_id"], "ingest", "load_orders")]
