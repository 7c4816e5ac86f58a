"""`assetbus bench scale --schedulers 1,2,3`: scheduler processes in one group, sharing the asset-events partitions.

The run is told in docs/benchmarks.md ("Several schedulers"); the processes' session timeout is raised to 60 s, so
their pause while the events are stored is no rebalance. `pinned_infra` restores every CPU mask it changed when the
run ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psutil
from aiokafka.admin import AIOKafkaAdminClient

from assetbus.benchmarks.processes import ProcessWatch, infra_cpu, infra_role
from assetbus.benchmarks.scheduler import prepare, service, store_events
from assetbus.benchmarks.scratch import at_least, record_count, scratch_pipeline, until
from assetbus.benchmarks.stats import Throughput, us_per
from assetbus.consumers.observe.lag import partitions_of
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity
from assetbus.producers.kafka.sender import partition_for
from assetbus.producers.kafka.topics import admin_client
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings


@dataclass
class SchedulerGroupReport(Throughput):
    schedulers: int
    events: int
    seconds: float = 0.0
    cpu_s: float = 0.0
    """User + system CPU of all the scheduler processes over the timed part."""
    peak_rss_mb: float = 0.0
    """The largest peak RSS of one scheduler process."""
    kafka_cpu_s: float = 0.0
    postgres_cpu_s: float = 0.0
    """CPU of the broker and of PostgreSQL over the timed part (everything else they did counts too)."""
    pinned: str = ""
    """How the processes were pinned (`--pin-schedulers`, `--pin-infra`), or empty."""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def infra_cpu_us_per_event(self) -> float:
        return us_per(self.kafka_cpu_s + self.postgres_cpu_s, self.events)


def one_asset_per_partition(partitions: int) -> list[AssetRef]:
    """Asset names whose records land on each of the topic's partitions, partition 0 first."""
    names: dict[int, str] = {}
    n = 0
    while len(names) < partitions:
        name = f"bench.stream-{n}"
        names.setdefault(partition_for(name.encode(), range(partitions)), name)
        n += 1
    return [AssetRef(name=names[p], uri=f"s3://bench/{names[p]}/") for p in sorted(names)]


def _dag_of(asset: AssetRef) -> str:
    return f"bench.each.{asset.name}"


async def run_scheduler_group(settings: Settings, schedulers: int, events: int, timeout_s: float = 600.0, *,
                              pin_schedulers: frozenset[int] | None = None,
                              pin_infra: frozenset[int] | None = None) -> SchedulerGroupReport:
    """`pin_schedulers`: the CPUs of the scheduler processes; `pin_infra`: of Kafka, PostgreSQL and this process."""
    pinned = [f"{what} on CPU {','.join(map(str, sorted(cpus)))}" for what, cpus in
              (("schedulers", pin_schedulers), ("Kafka, PostgreSQL and the load generator", pin_infra))
              if cpus is not None]
    report = SchedulerGroupReport(schedulers, 0, load_before=os.getloadavg(), pinned="; ".join(pinned))
    assets: list[AssetRef] = []  # one per asset-events partition, known once the topics exist

    def readiness(topics: Topics) -> list[str]:
        return [topics.readiness(_dag_of(a)) for a in assets]

    with pinned_infra(pin_infra):
        async with scratch_pipeline(settings, readiness) as (topics, db_url):
            partitions = len((await partitions_of(settings.kafka, [topics.asset_events]))[topics.asset_events])
            assets.extend(one_asset_per_partition(partitions))
            dags = [ConsumerDag(dag_id=_dag_of(a), schedule=AssetWait(a.name, mapping=Identity()), coalesce=False)
                    for a in assets]
            await prepare(settings, topics, db_url, dags, assets)
            group = f"{topics.prefix}-scheduler"
            async with contextlib.AsyncExitStack() as stack:
                watches: list[ProcessWatch] = [await stack.enter_async_context(service(
                    settings, topics, db_url, "scheduler", "--group-id", group, "--session-timeout-ms", "60000"))
                    for _ in range(schedulers)]
                signalled = await stack.enter_async_context(record_count(settings, readiness(topics)))
                async with admin_client(settings.kafka) as admin:
                    await until(lambda: _stable(admin, group, schedulers), timeout_s,
                                f"{schedulers} scheduler(s) in a stable group", every_s=0.2)
                await store_events(settings, topics, db_url, len(assets), assets)  # one warm-up event per asset
                await until(lambda: at_least(signalled, len(assets)), timeout_s, "the warm-up signals")
                pids = [w.pid for w in watches]
                if pin_schedulers is not None:
                    for pid in pids:
                        pin(pid, pin_schedulers)
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                try:
                    await store_events(settings, topics, db_url, events, assets, offset=len(assets))
                finally:
                    for pid in pids:
                        os.kill(pid, signal.SIGCONT)
                started, cpu_before, infra_before = time.perf_counter(), sum(w.cpu_s() for w in watches), infra_cpu()
                await until(lambda: at_least(signalled, events + len(assets)), timeout_s, f"{events:,} signals", 0.02)
                report.events, report.seconds = events, time.perf_counter() - started
                report.cpu_s = sum(w.cpu_s() for w in watches) - cpu_before
                report.kafka_cpu_s, report.postgres_cpu_s = (after - before for after, before in
                                                             zip(infra_cpu(), infra_before, strict=True))
                report.peak_rss_mb = max(w.peak_rss for w in watches) / 2**20
    report.load_after = os.getloadavg()
    return report


async def _stable(admin: AIOKafkaAdminClient, group: str, members: int) -> bool:
    (response,) = await admin.describe_consumer_groups([group])
    _, _, state, _, _, found, *_ = response.groups[0]
    return bool(state == "Stable" and len(found) == members)


def parse_cpus(text: str) -> frozenset[int]:
    """`"0"`, `"0,1"` or `"2-3"` as a set of CPU numbers that this machine has."""
    cpus: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        low, _, high = part.partition("-")
        try:
            cpus.update(range(int(low), int(high or low) + 1))
        except ValueError:
            raise ValueError(f"CPUs {text!r}: write them as 1, 0,1 or 2-3") from None
    available = os.sched_getaffinity(0)
    if not cpus or not cpus <= available:
        raise ValueError(f"CPUs {text!r}: this machine offers {sorted(available)}")
    return frozenset(cpus)


def pin(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of process `pid` and of its descendants on `cpus`, by task id (a JVM's threads do not inherit a
    later change of its first thread; new PostgreSQL backends inherit the postmaster's); ended ones are skipped."""
    try:
        processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for process in processes:
        with contextlib.suppress(psutil.Error):
            for thread in process.threads():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.sched_setaffinity(thread.id, cpus)


def infra_pids() -> list[int]:
    """The local Kafka broker(s) and PostgreSQL server processes on this machine (as `infra_cpu` counts them)."""
    return [proc.pid for proc in psutil.process_iter(["name", "cmdline"]) if infra_role(proc.info) is not None]


@contextlib.contextmanager
def pinned_infra(cpus: frozenset[int] | None) -> Iterator[None]:
    """Kafka, PostgreSQL and this process on `cpus` while the block runs (nothing when `cpus` is None)."""
    if cpus is None:
        yield
        return
    pids = [*infra_pids(), os.getpid()]
    everything = frozenset(os.sched_getaffinity(0))
    try:
        for pid in pids:
            pin(pid, cpus)
        yield
    finally:
        for pid in [*infra_pids(), os.getpid()]:
            pin(pid, everything)
