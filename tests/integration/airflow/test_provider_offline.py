"""`dag.test()` of a DAG that emits runs offline through the SDK's test double: no assetbus API, no Kafka, no
worker credential and no assetbus connection, only Airflow 3.3 and its metadata DB (SQLite).

Runs the documented example (examples/airflow/test_offline.py) in the Airflow venv, as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assetbus.infra.airflow import AIRFLOW_VENV
from tests.integration.airflow.stack import require_airflow_venv

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "airflow" / "test_offline.py"


@pytest.fixture
def airflow_home() -> Iterator[Path]:
    require_airflow_venv()
    home = Path(tempfile.mkdtemp(prefix="assetbus-offline-"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_dag_test_emits_into_the_test_double_without_assetbus(airflow_home: Path) -> None:
    dags = airflow_home / "dags"
    dags.mkdir()
    shutil.copy(EXAMPLE, dags / EXAMPLE.name)  # dag.test() finds the DAG in its bundle, the DAGs folder
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "ASSETBUS_", "KAFKA_", "VIRTUAL_ENV", "PYTHONPATH", "DATABASE_URL"))}
    env.update({"AIRFLOW_HOME": str(airflow_home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
                # nothing listens here: an emission that tried the API would fail
                "ASSETBUS_API_URL": "http://127.0.0.1:9", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9"})
    migrate = subprocess.run([str(AIRFLOW_VENV / "bin" / "airflow"), "db", "migrate"], env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    done = subprocess.run([str(AIRFLOW_VENV / "bin" / "python"), str(dags / EXAMPLE.name)], env=env,
                          cwd=airflow_home, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "dag.test() emitted offline: ok" in done.stdout


IN_AIRFLOW = '''
import inspect
from airflow.sdk import Asset
import assetbus.producers.airflow as provider
from assetbus.producers.airflow import AssetbusEmitOperator, AssetbusHook, AssetEmitConflict, install_asset_emit
from assetbus.producers.options import EMIT_FIELDS

assert not hasattr(Asset, "emit"), "importing assetbus patched Airflow"
install_asset_emit()
install_asset_emit()  # idempotent
assert Asset.emit.__module__ == "assetbus.producers.airflow.emit"

for surface in (AssetbusHook.emit, AssetbusHook.aemit, Asset.emit, Asset.aemit):
    parameters = inspect.signature(surface).parameters
    assert not EMIT_FIELDS & set(parameters), surface
    (options,) = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert "Unpack[SendOptions]" in str(options.annotation), (surface, options.annotation)

orders = Asset("orders", uri="s3://example/orders")
operator = AssetbusEmitOperator(task_id="announce", asset=orders, partition_key="{{ ds }}", dedupe_key="k")
assert set(operator.template_fields) == {"asset_name", "asset_uri"} | EMIT_FIELDS, operator.template_fields
assert (operator.partition_key, operator.dedupe_key, operator.outlets) == ("{{ ds }}", "k", [orders])
try:
    AssetbusEmitOperator(task_id="misspelt", asset=orders, dedup_key="k")
except TypeError as error:
    assert "dedup_key" in str(error), error
else:
    raise AssertionError("a misspelt option was accepted")

delattr(Asset, "emit"); delattr(Asset, "aemit")
Asset.emit = lambda self, **kwargs: "airflow's own"
try:
    install_asset_emit()
except AssetEmitConflict as error:
    assert "already has an emit() of its own" in str(error), error
else:
    raise AssertionError("install_asset_emit() replaced Airflow's own Asset.emit")
assert Asset.emit(orders) == "airflow's own"

from airflow.state import BaseStoreBackend  # the public base class, not airflow._shared
from assetbus.producers.airflow.store_backend import AssetbusStoreBackend
assert issubclass(AssetbusStoreBackend, BaseStoreBackend) and AssetbusStoreBackend.__mro__[1] is BaseStoreBackend
print("ok")
'''


def test_asset_emit_is_opt_in_and_refuses_airflows_own(airflow_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["AIRFLOW_HOME"] = str(airflow_home)
    done = subprocess.run([str(AIRFLOW_VENV / "bin" / "python"), "-c", IN_AIRFLOW], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (done.stdout + done.stderr)[-3000:]


CONNECTION_FORM = '''
import json
import warnings

from airflow.providers_manager import ProvidersManager

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    manager = ProvidersManager()
    behaviour = manager.field_behaviours.get("assetbus")
    widgets = {name: info.field for name, info in manager.connection_form_widgets.items()
               if name.startswith("extra__assetbus__")}
    hook = manager.hooks["assetbus"]
print(json.dumps({"behaviour": behaviour, "widgets": widgets, "hook_name": hook.hook_name if hook else None,
                  "warnings": [str(w.message) for w in caught if "assetbus" in str(w.message).lower()]}))
'''


def test_airflow_reads_the_connection_form_from_the_provider_info(airflow_home: Path) -> None:
    """Airflow's ProvidersManager builds the `assetbus` form from the provider info (conn-fields,
    ui-field-behaviour, hook-name), typed, with no deprecation warning about the hook."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["AIRFLOW_HOME"] = str(airflow_home)
    done = subprocess.run([str(AIRFLOW_VENV / "bin" / "python"), "-c", CONNECTION_FORM], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    form = json.loads(done.stdout.strip().splitlines()[-1])
    assert form["hook_name"] == "assetbus" and form["warnings"] == []
    assert form["behaviour"]["hidden_fields"] == ["schema", "login", "port"]
    assert form["behaviour"]["relabeling"] == {"host": "assetbus API URL", "password": "Worker credential"}
    widgets = form["widgets"]
    assert set(widgets) == {"extra__assetbus__topic_prefix", "extra__assetbus__kafka_conn_id"}
    assert widgets["extra__assetbus__topic_prefix"]["schema"]["title"] == "Topic prefix"
    assert widgets["extra__assetbus__kafka_conn_id"]["schema"]["type"] == ["string", "null"]
