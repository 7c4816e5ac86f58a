"""The execution API benchmark behind `assetbus bench api` (docs/benchmarks.md, "Execution API")."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field

import httpx
import psutil

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.http_load import LoadResult, LoadSpec, http_request
from assetbus.benchmarks.persister import register_assets
from assetbus.benchmarks.scratch import scratch_pipeline, service_env, stop
from assetbus.benchmarks.stats import percentile
from assetbus.infra.ports import free_port
from assetbus.producers.tokens import task_token
from assetbus.schemas import AssetRef, task_instance_id
from assetbus.settings import Settings

ASSET = {"name": "bench.orders", "uri": "s3://bench/orders/"}
STATE_PATH = "/execution/store/ti"
"""The task-state routes the benchmark drives (Airflow 3.3's state store; `/execution/state/ti` is an alias)."""


@dataclass(frozen=True)
class ApiBenchOptions:
    requests: int = 4000
    concurrency: int = 16
    emits: int = 2000
    workers: int = 1
    python: str = sys.executable
    profile: str | None = None


@dataclass(frozen=True)
class Phase:
    """One measurement: `count` requests from `clients` connections."""

    name: str
    label: str
    clients: int
    count: int
    per_s: float
    p50_ms: float
    p99_ms: float
    api_cpu_us: float
    """CPU of the API process(es) per request (user + system)."""
    client_cpu_us: float
    """CPU of the load generator per request."""


@dataclass(frozen=True)
class ApiBenchReport:
    phases: list[Phase]
    options: ApiBenchOptions
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    conditions: dict[str, str] = field(default_factory=dict)

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.name == name)

    def figures(self) -> dict[str, float]:
        """The figures `assetbus bench all --json` reports (the `concurrency`-client runs)."""
        get, put, emit = self.phase("get"), self.phase("put"), self.phase("emit")
        return {"api_get_per_s": round(get.per_s, 1), "api_get_p99_ms": round(get.p99_ms, 2),
                "api_put_per_s": round(put.per_s, 1), "api_put_p99_ms": round(put.p99_ms, 2),
                "http_emit_per_s": round(emit.per_s, 1), "http_emit_p99_ms": round(emit.p99_ms, 2)}


@dataclass(frozen=True)
class _Stack:
    port: int
    api: psutil.Process


@contextlib.asynccontextmanager
async def _fresh_stack(s: Settings, options: ApiBenchOptions) -> AsyncIterator[_Stack]:
    """A fresh database and topic prefix with the API and a persister running on them."""
    port = free_port()
    services: list[asyncio.subprocess.Process] = []
    async with scratch_pipeline(s) as (topics, db_url):
        try:
            await register_assets(db_url, [AssetRef(**ASSET)])
            cli = [options.python, "-c", "from assetbus.cli.main import main; main()", "run"]
            workers = ["--workers", str(options.workers)] if options.workers != 1 else []
            for args in (["api", "--port", str(port), "--log-level", "WARNING", *workers],
                         ["persister", "--group-id", f"{topics.prefix}-persister", "--log-level", "WARNING"]):
                services.append(await asyncio.create_subprocess_exec(*cli, *args, env=service_env(s, topics, db_url),
                                                                     stdout=asyncio.subprocess.DEVNULL))
            await _until_up(port, services[0])
            yield _Stack(port, psutil.Process(services[0].pid))
        finally:
            await asyncio.gather(*(stop(service) for service in services))


async def _until_up(port: int, api: asyncio.subprocess.Process) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=2) as http:
        for _ in range(300):
            if api.returncode is not None:
                raise RuntimeError(f"the API exited with code {api.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError("the API did not start")


def _cpu(process: psutil.Process) -> float:
    """User + system seconds of a process and its children (the workers of a multi-worker API)."""
    total = 0.0
    for p in (process, *process.children(recursive=True)):
        with contextlib.suppress(psutil.Error):
            times = p.cpu_times()
            total += times.user + times.system
    return total


async def _load(spec: LoadSpec) -> LoadResult:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "assetbus.benchmarks.http_load", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate(json.dumps(asdict(spec)).encode())
    if child.returncode != 0:
        raise RuntimeError(f"the load generator exited with code {child.returncode}")
    result = LoadResult(**json.loads(out))
    if result.unexpected:
        raise RuntimeError(f"unexpected responses: {result.unexpected}")
    return result


@contextlib.asynccontextmanager
async def _profiled(api: psutil.Process, path: str | None) -> AsyncIterator[None]:
    if path is None:
        yield
        return
    spy = await asyncio.create_subprocess_exec(
        os.path.join(os.path.dirname(sys.executable), "py-spy"), "record", "--pid", str(api.pid), "--format", "raw",
        "--rate", "250", "--nonblocking", "--output", path, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    await asyncio.sleep(0.5)  # py-spy attaches
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        await asyncio.wait_for(spy.wait(), 30)


async def _phase(stack: _Stack, options: ApiBenchOptions, name: str, label: str, clients: int, count: int,
                 requests: list[str], expect: list[int]) -> Phase:
    spec = LoadSpec("127.0.0.1", stack.port, clients, count, requests, expect)
    profile = f"{options.profile}-{name}{clients}.txt" if options.profile else None
    async with _profiled(stack.api, profile):
        before = _cpu(stack.api)
        result = await _load(spec)
        api_cpu = _cpu(stack.api) - before
    return Phase(name, label, clients, count, count / result.elapsed_s, percentile(result.latencies_ms, 50),
                 percentile(result.latencies_ms, 99), api_cpu / count * 1e6, result.client_cpu_s / count * 1e6)


def _requests(secret: str, concurrency: int) -> tuple[list[str], list[str], list[str]]:
    """PUTs and GETs (one task instance per client), and distinct emits (the first token)."""
    tokens = [task_token(secret, "bench", "run-1", "load", map_index=i) for i in range(concurrency)]
    paths = [f"{STATE_PATH}/{task_instance_id('bench', 'run-1', 'load', i)}" for i in range(concurrency)]
    auth = [{"Authorization": f"Bearer {t}", "Content-Type": "application/json"} for t in tokens]
    puts, gets = [], []
    for i in range(concurrency * 50):
        w = i % concurrency
        puts.append(http_request("PUT", f"{paths[w]}/k{i // concurrency}", auth[w],
                                 json.dumps({"value": {"batch": i}}).encode()))
        gets.append(http_request("GET", f"{paths[w]}/k{i // concurrency}", auth[w]))
    emits = [http_request("POST", "/execution/asset-events/emit", auth[0], json.dumps(
        {"asset": ASSET, "extra": {"batch": i}, "dedupe_key": f"batch-{i}"}).encode()) for i in range(20_000)]
    return puts, gets, emits


async def run_api_benchmark(s: Settings, options: ApiBenchOptions) -> ApiBenchReport:
    load_before = os.getloadavg()
    n, c = options.requests, options.concurrency
    phases: list[Phase] = []
    async with _fresh_stack(s, options) as stack:
        puts, gets, emits = _requests(s.token_secret, c)
        put_ok = [200, 204]
        await _load(LoadSpec("127.0.0.1", stack.port, c, len(puts), puts, put_ok))  # warm-up: every key exists
        one = max(1, n // 4)  # one client is about latency: fewer requests
        phases.append(await _phase(stack, options, "put1", "task state PUT, 1 client", 1, one, puts, put_ok))
        phases.append(await _phase(stack, options, "get1", "task state GET, 1 client", 1, one, gets, [200]))
        phases.append(await _phase(stack, options, "put", f"task state PUT, {c} clients", c, n, puts, put_ok))
        phases.append(await _phase(stack, options, "get", f"task state GET, {c} clients", c, n, gets, [200]))
        unsent = iter(emits)  # each emit is a new dedupe key: the phases take consecutive slices of the emits

        def emit_slice(count: int) -> list[str]:
            return list(itertools.islice(unsent, count))

        await _load(LoadSpec("127.0.0.1", stack.port, 1, 20, emit_slice(20), [200]))  # the persister joined
        single = max(1, options.emits // 4)
        phases.append(await _phase(stack, options, "emit1", "HTTP emit → receipt, 1 client", 1, single,
                                   emit_slice(single), [200]))
        phases.append(await _phase(stack, options, "emit", f"HTTP emit → receipt, {c} clients", c, options.emits,
                                   emit_slice(options.emits), [200]))
    return ApiBenchReport(phases, options, load_before, os.getloadavg(), conditions())
