"""The Airflow suite's stack: one real Airflow 3 (api-server, scheduler, dag-processor, its metadata DB on
SQLite) per session, next to real assetbus processes on a fresh database and topic prefix made for this
session. SQLite, not PostgreSQL: idle, the stack took 22 % of a core on SQLite and 31 % on PostgreSQL (its
backends, and the scheduler's round trips), and it idles through most of the suite.

Airflow is slow to start (about a minute on two cores), so it is started once; each test uses its
own DAGs or partition keys. Needs `.venv-airflow/` (`make airflow-venv`, run by `make test`):
without it these tests are skipped, or fail when ASSETBUS_REQUIRE_AIRFLOW=1 (as in `make test`).

The fixtures and hooks are registered by tests/integration/conftest.py, so that any integration test
(tests/integration/airflow, the chaos harness's Airflow kinds) shares the one stack. The modules whose
tests use it run one after the other (`group_stack_modules`), and the stack stops after the last of them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import create_engine
from assetbus.infra.airflow import AIRFLOW_VENV
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics
from tests.conftest import AIRFLOW_STACK_FILES, TEMPLATE_DB, _plain_dsn, drop_database, on_airflow_stack
from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import second_api

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "airflow"
TEST_DAGS = Path(__file__).parent / "dags"
DAG_IDS = ("ingest_orders", "orders_by_partition", "daily_clicks_report", "orders_replica", "state_checkpoint",
           "held_attempt", "asset_state_intruder", "callback_emits", "readiness_watched", "chaos_watched",
           "partition_sensed", "mapped_emits", "attested_intruder", "attested_bypass", "attested_replay")


ATTESTED_LIFETIMES = {"ASSETBUS_API_AIRFLOW_CALLBACK_GRACE_S": "30", "ASSETBUS_API_AIRFLOW_ATTESTED_TTL_S": "20"}
"""Short lifetimes of attested tokens, so that a replay after its attempt's end plus the grace is quick to test
(test_attested_identity.py); the SDK renews a running attempt's token every 10 s."""

_RUNNING: list[AirflowStack] = []
"""The session's stack while it runs: stopped after the last test that uses it, not at the session's end, so
that its idle scheduler (a third of a core) does not slow the rest of the suite."""
_STACK_MODULES: set[Path] = set()
"""The test files with a test that uses the stack (`group_stack_modules`)."""
STACK_FIXTURE = "airflow_stack"


def group_stack_modules(items: list[pytest.Item]) -> None:
    """Put the tests of the files that use the stack one after the other (in their order, where the first of
    them was), so that the stack starts once and stops after the last of them. Deterministic: pytest-xdist's
    workers collect the same order."""
    _STACK_MODULES.clear()
    _STACK_MODULES.update(Path(str(item.path)) for item in items if STACK_FIXTURE in getattr(item, "fixturenames", ()))
    if strays := sorted(str(path) for path in _STACK_MODULES if not on_airflow_stack(str(path))):
        raise pytest.UsageError(f"{', '.join(strays)} use the Airflow stack: their place is among "
                                f"{', '.join(AIRFLOW_STACK_FILES)}, which one worker runs one after the other")
    users = [item for item in items if Path(str(item.path)) in _STACK_MODULES]
    if not users:
        return
    first = items.index(users[0])
    rest = [item for item in items if Path(str(item.path)) not in _STACK_MODULES]
    items[:] = [*rest[:first], *users, *rest[first:]]


def _uses_stack(item: pytest.Item | None) -> bool:
    return item is not None and Path(str(item.path)) in _STACK_MODULES


@pytest.hookimpl(trylast=True)  # after the test's own fixtures (a bridge, a module's services) are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _RUNNING and _uses_stack(item) and not _uses_stack(nextitem):
        _RUNNING.pop().stop()  # the fixture's own teardown later drops its database and topics


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                               call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report ends with the end of every log of the stack (its services', Airflow's): they live
    in a temporary folder that is gone when CI prints the failure."""
    report: pytest.TestReport = yield
    if report.failed and _RUNNING and _uses_stack(item):
        stack = _RUNNING[-1]
        logs = sorted([*stack.home.glob("*.log"), *stack.home.glob("airflow/*.log")])  # services', then Airflow's
        for name in (str(log.relative_to(stack.home).with_suffix("")) for log in logs):
            report.sections.append((f"the end of {name}.log", stack.log_tail(name, 2000)))
    return report


async def _create_database(admin: str, name: str) -> None:
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"')
    finally:
        await conn.close()


def require_airflow_venv() -> None:
    """Skip without `.venv-airflow/`, or fail when ASSETBUS_REQUIRE_AIRFLOW=1 (as in `make test`)."""
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        message = f"no Airflow venv at {AIRFLOW_VENV}: run `make airflow-venv`"
        if os.environ.get("ASSETBUS_REQUIRE_AIRFLOW") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def airflow_stack(infra: Settings, template_db: str) -> Iterator[AirflowStack]:
    require_airflow_venv()
    # not under pytest's basetemp: concurrent pytest sessions of the same user prune each other's old ones
    home = Path(tempfile.mkdtemp(prefix="assetbus-airflow-"))
    dags = home / "dags"
    dags.mkdir()
    for source in [*(EXAMPLES / "dags").glob("*.py"), *TEST_DAGS.glob("*.py")]:
        shutil.copy(source, dags / source.name)
    name = f"assetbus_af_{uuid.uuid4().hex[:12]}"
    admin = _plain_dsn(infra.database_url)
    asyncio.run(_create_database(admin, name))
    topics = Topics(prefix=f"af{uuid.uuid4().hex[:10]}")
    asyncio.run(ensure_topics(infra.kafka, topics))
    stack = AirflowStack(home=home, dags_folder=dags, bootstrap_servers=infra.bootstrap_servers,
                         database_url=make_url(infra.database_url).set(database=name)
                         .render_as_string(hide_password=False),
                         topic_prefix=topics.prefix, token_secret="airflow-test-" + uuid.uuid4().hex,
                         dag_ids=DAG_IDS, service_env=ATTESTED_LIFETIMES)
    stack.start()
    _RUNNING.append(stack)
    try:
        yield stack
    finally:
        if _RUNNING:
            _RUNNING.pop().stop()
        asyncio.run(drop_database(admin, name))
        asyncio.run(delete_topics(infra.kafka, [*topics.core(), *(topics.readiness(d) for d in DAG_IDS)]))
        if not os.environ.get("ASSETBUS_KEEP_AIRFLOW_HOME"):
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_api(airflow_stack: AirflowStack) -> Iterator[AirflowApi]:
    api = AirflowApi(airflow_stack)
    yield api
    api.close()


@pytest.fixture(scope="session")
def credential_api(airflow_stack: AirflowStack) -> Iterator[str]:
    """A second assetbus minter on the stack in `credential` mode (a deployment that cannot run the backend):
    task tokens for the worker credential, after Airflow's attempt check."""
    yield from second_api(airflow_stack, "api-credential-mode", ASSETBUS_API_AIRFLOW_IDENTITY="credential")


@pytest.fixture
async def stack_engine(airflow_stack: AirflowStack) -> AsyncIterator[AsyncEngine]:
    """An engine on the session's assetbus database (to read events and runs back)."""
    engine = create_engine(airflow_stack.database_url)
    yield engine
    await engine.dispose()
