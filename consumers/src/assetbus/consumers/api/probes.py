"""The API's own `/metrics`, `/healthz` and `/readyz` (no token needed), and its request metrics, summed over
the workers under `--workers N` (docs/metrics.md).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assetbus.consumers.api.server import multiprocess_dir
from assetbus.consumers.observe.process_metrics import LATENCY_BUCKETS, register_process_metrics
from assetbus.consumers.observe.readiness import ReadinessChecks

router = APIRouter(tags=["service"])


class ApiMetrics:
    """Requests by route template and status, and their duration. With `PROMETHEUS_MULTIPROC_DIR` set they are
    written to that directory and `registry` serves their sums over every worker."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        shared = multiprocess_dir()
        own: CollectorRegistry | None = self.registry
        if shared is not None:
            MultiProcessCollector(self.registry, path=shared)  # type: ignore[no-untyped-call]
            own = None  # in the directory's files, read back through the collector
        register_process_metrics(self.registry)
        self.requests = Counter("assetbus_api_requests", "HTTP requests answered, by route and status.",
                                ["method", "route", "status"], registry=own)
        self.seconds = Histogram("assetbus_api_request_seconds", "Time to answer an HTTP request, by route.",
                                 ["method", "route"], buckets=LATENCY_BUCKETS, registry=own)


class RequestMetricsMiddleware:
    """Counts every HTTP request under its route template (`/ui/api/events/{event_id}`), never the raw path."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method=method, route=route, status=str(status)).inc()
            self.metrics.seconds.labels(method=method, route=route).observe(time.perf_counter() - started)


class Alive(BaseModel):
    status: str = Field(description="`alive` while the process answers.")


class CheckOut(BaseModel):
    ok: bool = Field(description="Whether the check passed.")
    detail: str = Field(description="What was found, or what to fix.")
    seconds: float = Field(description="How long the check took.")


class Ready(BaseModel):
    status: str = Field(description="`ready`; `degraded` (200: the broker is away, so HTTP emits answer 503 while "
                        "task and asset state are served); or `not_ready` (then the status code is 503).")
    checks: dict[str, CheckOut] = Field(description="broker, database and migrations, each with its result.")


@router.get("/healthz", response_model=Alive, summary="Liveness (no token needed)")
async def healthz() -> Alive:
    return Alive(status="alive")


@router.get("/readyz", response_model=Ready, summary="Readiness: database and migrations head; the broker degrades "
            "(no token)",
            responses={503: {"model": Ready, "description": "A dependency is not ready; `checks` says which."}})
async def readyz(request: Request) -> Any:
    checks: ReadinessChecks = request.app.state.readiness
    report = await checks.check()
    return JSONResponse(report.as_json(), status_code=200 if report.ready else 503)


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    registry: CollectorRegistry = request.app.state.metrics_registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
