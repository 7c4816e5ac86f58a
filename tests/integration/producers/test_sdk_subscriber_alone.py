"""A downstream service with only `assetbus-sdk` (and `faststream` for the second) handles each ready
partition once across a kill -9, claiming runs through the execution API (no database credentials).

The service runs in a fresh venv built from the wheels (as in test_sdk_alone.py), as a subprocess;
persister, scheduler and API run in this test's process on the test's database and topics. The
handler writes `start <partition>` and `done <partition>` lines to a file, the ledger
`claim <run> <state>`. The third partition's handler blocks, and the service is killed with
SIGKILL while it does; a restarted service must finish it once the dead one's lease (3 s here) has
expired, skip the runs that finished (also when their signal is published again) and never finish
any run twice.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api.routes.runs import subscriber_token
from assetbus.consumers.storage.runs import RunRow, list_runs
from assetbus.producers import AsyncEmitter
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.readiness.test_readiness_subscriber import ORDERS, emitter, republish
from tests.integration.producers.test_sdk_alone import _oldest_python, _run, sdk_venv, wheels

pytestmark = pytest.mark.integration

__all__ = ["emitter", "sdk_venv", "wheels"]  # fixtures

CONSUMER = "orders-service"

COMMON = """
import asyncio, os, signal, sys
from pathlib import Path
from assetbus.producers.readiness import ApiLedger, Claim
from assetbus.schemas import ReadinessSignal, Topics

out = Path(os.environ["OUT"])
block = Path(os.environ["BLOCK"])
topics = Topics(prefix=os.environ["PREFIX"])

def note(line: str) -> None:
    with out.open("a") as f:
        f.write(line + "\\n")
        f.flush()
        os.fsync(f.fileno())

class NotingLedger(ApiLedger):
    async def claim(self, run_id: str, consumer: str) -> Claim:
        claim = await super().claim(run_id, consumer)
        note(f"claim {run_id} {claim.state.value}")
        return claim

ledger = NotingLedger(os.environ["API_URL"], os.environ["SUBSCRIBER_TOKEN"], lease_s=3)

async def handle(signal: ReadinessSignal) -> None:
    note(f"start {signal.partition_key}")
    await asyncio.sleep(float(os.environ.get("HANDLE_S", "0")))
    while block.exists() and signal.partition_key == "batch-3":
        await asyncio.sleep(0.05)
    note(f"done {signal.partition_key}")
"""

PLAIN = COMMON + """
from assetbus.producers.readiness import ReadinessSubscriber

async def main() -> None:
    subscriber = ReadinessSubscriber(os.environ["BOOTSTRAP"], "per_batch", handle, group_id=os.environ["GROUP"],
                                     ledger=ledger, topics=topics, consumer_name="orders-service")
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    async with subscriber:  # leaving it finishes the signals in flight and leaves the group
        await subscriber.wait_assigned()
        note("ready")
        running = asyncio.ensure_future(subscriber.run_forever())
        await asyncio.wait([running, asyncio.ensure_future(stopping.wait())], return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            running.result()

asyncio.run(main())
"""

FASTSTREAM = COMMON + """
from faststream import FastStream
from faststream.kafka import KafkaBroker
from assetbus.producers.readiness.faststream import subscribe_readiness

broker = KafkaBroker(os.environ["BOOTSTRAP"])
subscribe_readiness(broker, "per_batch", handle, group_id=os.environ["GROUP"], ledger=ledger, topics=topics,
                    consumer_name="orders-service")
app = FastStream(broker, after_startup=[lambda: note("ready")], after_shutdown=[ledger.stop])

asyncio.run(app.run())  # SIGTERM: FastStream finishes the signal in flight and stops
"""


@pytest.fixture(scope="module")
def faststream_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Path:
    """A fresh venv with the SDK and its FastStream extra only."""
    python = _oldest_python() or sys.executable
    venv = tmp_path_factory.mktemp("faststream-venv") / "venv"
    _run(python, "-m", "venv", venv)
    _run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
         wheels["assetbus-schemas"], f"{wheels['assetbus-sdk']}[faststream]")
    return venv


class Service:
    """The subscriber script in the SDK-only venv, as a subprocess."""

    def __init__(self, python: Path, script: str, env: dict[str, str], out: Path) -> None:
        self.python, self.script, self.env, self.out = python, script, env, out
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        readies = self.lines().count("ready")
        self.process = await asyncio.create_subprocess_exec(
            str(self.python), "-c", self.script, env=self.env, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        await wait_for(lambda: self._ready(readies), timeout_s=60, what="the subscriber to join its group")

    async def _ready(self, before: int) -> bool:
        assert self.process is not None
        if self.process.returncode is not None:
            assert self.process.stderr is not None
            raise AssertionError(f"the subscriber died: {(await self.process.stderr.read()).decode()[-3000:]}")
        return self.lines().count("ready") > before

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            await self.kill()


async def runs(engine: AsyncEngine) -> dict[str, RunRow]:
    async with engine.connect() as conn:
        return {run.partition_key or "": run for run in await list_runs(conn, dag_id="per_batch")}


@pytest.mark.parametrize("flavour", ["plain", "faststream"])
async def test_an_sdk_only_service_handles_each_partition_once_across_a_kill_9(
        flavour: str, request: pytest.FixtureRequest, infra: Settings, topics: Topics, token_secret: str,
        engine: AsyncEngine, emitter: AsyncEmitter, api_url: str, tmp_path: Path) -> None:
    venv: Path = request.getfixturevalue("sdk_venv" if flavour == "plain" else "faststream_venv")
    out, block = tmp_path / "handled.txt", tmp_path / "block"
    env = {"PATH": "/usr/bin:/bin", "OUT": str(out), "BLOCK": str(block), "API_URL": api_url,
           "SUBSCRIBER_TOKEN": subscriber_token(token_secret, "per_batch", CONSUMER), "PREFIX": topics.prefix,
           "BOOTSTRAP": infra.bootstrap_servers, "GROUP": f"{topics.prefix}-{flavour}"}
    service = Service(venv / "bin" / "python", PLAIN if flavour == "plain" else FASTSTREAM, env, out)
    try:
        await service.start()
        for n in (1, 2):
            await emitter.emit(ORDERS, partition_key=f"batch-{n}", dedupe_key=f"batch-{n}")
        await wait_for(lambda: _has(service, "done batch-1", "done batch-2"), what="batches 1 and 2 handled")

        block.touch()
        await emitter.emit(ORDERS, partition_key="batch-3", dedupe_key="batch-3")
        await wait_for(lambda: _has(service, "start batch-3"), what="batch 3's handler to start")
        await wait_for(lambda: _status(engine, "batch-3", "running"), what="batch 3's run claimed")
        await service.kill()
        block.unlink()

        # what a scheduler does after a crash before the broker's ack: a finished run's signal once more
        first = (await runs(engine))["batch-1"]
        await republish(infra, topics, engine, first)
        await service.start()
        await wait_for(lambda: _has(service, "done batch-3"), timeout_s=60, what="batch 3 finished after the restart")
        await wait_for(lambda: _all_success(engine), what="every run recorded as success")
        await wait_for(lambda: _has(service, f"claim {first.run_id} finished"), what="the repeat of batch 1 skipped")
    finally:
        await service.stop()

    handled = [line for line in service.lines() if line.startswith(("start", "done"))]
    assert sorted(line for line in handled if line.startswith("done")) == [
        "done batch-1", "done batch-2", "done batch-3"], handled
    assert handled.count("start batch-3") == 2  # interrupted by the kill, then retried: at least once
    assert handled.count("start batch-1") == handled.count("start batch-2") == 1  # finished: never again
    final = await runs(engine)
    assert {key: (run.status, run.consumer) for key, run in final.items()} == {
        key: ("success", CONSUMER) for key in ("batch-1", "batch-2", "batch-3")}
    assert (final["batch-1"].attempts, final["batch-3"].attempts) == (1, 2)


async def _has(service: Service, *lines: str) -> bool:
    present = service.lines()
    return all(line in present for line in lines)


async def _status(engine: AsyncEngine, key: str, status: str) -> bool:
    run = (await runs(engine)).get(key)
    return run is not None and run.status == status


async def _all_success(engine: AsyncEngine) -> bool:
    found = await runs(engine)
    return len(found) == 3 and all(run.status == "success" for run in found.values())

