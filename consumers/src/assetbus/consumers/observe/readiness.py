"""The readiness check behind every `/readyz` (docs/metrics.md, "Where each service serves them", tells its checks
and statuses). Each check opens its own short-lived connection (a real round trip, from any event loop or thread).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg

from assetbus.consumers.storage.urls import asyncpg_dsn
from assetbus.migrations.heads import migration_heads
from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.access import AccessRefusals
from assetbus.producers.kafka.topics import admin_client


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    detail: str
    seconds: float


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    checks: dict[str, CheckResult] = field(default_factory=dict)
    degraded_without: frozenset[str] = frozenset()
    """Checks whose failure degrades the service but leaves it ready."""

    @property
    def ready(self) -> bool:
        return all(check.ok or name in self.degraded_without for name, check in self.checks.items())

    @property
    def status(self) -> str:
        if not self.ready:
            return "not_ready"
        return "ready" if all(check.ok for check in self.checks.values()) else "degraded"

    def as_json(self) -> dict[str, object]:
        return {"status": self.status,
                "checks": {name: {"ok": c.ok, "detail": c.detail, "seconds": round(c.seconds, 4)}
                           for name, c in self.checks.items()}}


class ReadinessChecks:
    """`await check()` → ReadinessReport. `broker=None` / `database_url=None` leave that check out."""

    def __init__(self, *, broker: KafkaConnection | None, database_url: str | None, timeout_s: float = 5.0,
                 cache_s: float = 1.0, degraded_without: frozenset[str] = frozenset(),
                 access: AccessRefusals | None = None) -> None:
        self._broker = broker
        self._access = access
        self._degraded_without = degraded_without
        self._dsn = None if database_url is None else asyncpg_dsn(database_url)
        self._timeout_s = timeout_s
        self._cache_s = cache_s
        self._heads = migration_heads() if database_url is not None else set()
        self._last: tuple[float, ReadinessReport] | None = None

    async def check(self) -> ReadinessReport:
        if self._last is not None and time.monotonic() - self._last[0] < self._cache_s:
            return self._last[1]
        checks: dict[str, CheckResult] = {}
        if self._broker is not None:
            checks["broker"] = await self._timed(self._check_broker)
        if self._dsn is not None:
            revisions: set[str] = set()

            async def database() -> str:  # the revisions in its `alembic_version` (none: never migrated)
                conn = await asyncpg.connect(self._dsn, timeout=self._timeout_s)
                try:
                    if await conn.fetchval("SELECT to_regclass('alembic_version') IS NOT NULL"):
                        revisions.update(str(r[0]) for r in await conn.fetch("SELECT version_num FROM alembic_version"))
                finally:
                    await conn.close()
                return "answers"

            checks["database"] = await self._timed(database)
            if not checks["database"].ok:
                checks["migrations"] = CheckResult(False, "the database did not answer", 0.0)
            elif revisions != self._heads:
                checks["migrations"] = CheckResult(
                    False, f"database at {sorted(revisions) or 'no revision'}, this code expects "
                           f"{sorted(self._heads)}: run `assetbus migrate`", 0.0)
            else:
                checks["migrations"] = CheckResult(True, f"at head {', '.join(sorted(revisions))}", 0.0)
        if self._access is not None:
            refused = self._access.detail()
            checks["kafka_access"] = CheckResult(not refused, refused or "no refusal by the cluster's ACLs", 0.0)
        report = ReadinessReport(checks, self._degraded_without)
        self._last = (time.monotonic(), report)
        return report

    async def _timed(self, probe: Callable[[], Awaitable[str]]) -> CheckResult:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._timeout_s):
                detail = await probe()
        except TimeoutError:
            return CheckResult(False, f"no answer within {self._timeout_s:g}s", time.perf_counter() - started)
        except Exception as error:
            return CheckResult(False, f"{type(error).__name__}: {error}"[:300], time.perf_counter() - started)
        return CheckResult(True, detail, time.perf_counter() - started)

    async def _check_broker(self) -> str:
        assert self._broker is not None
        async with admin_client(self._broker, request_timeout_ms=int(self._timeout_s * 1000)) as admin:
            cluster = await admin.describe_cluster()
        return f"{len(cluster.get('brokers', []))} broker(s) at {self._broker.bootstrap}"
