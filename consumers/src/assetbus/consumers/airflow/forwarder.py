"""The Airflow forwarder: every stored event of an asset that Airflow knows becomes one Airflow asset event,
exactly once through the intent ledger of `storage.forwarded` (docs/airflow.md, "Forwarding events into Airflow",
tells how). A batch's offsets are committed once every event in it is settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.config import ForwarderConfig
from assetbus.consumers.airflow.declared import bridge_served_assets
from assetbus.consumers.airflow.errors import AirflowError, AirflowNotFound, AirflowRefused, error_kind
from assetbus.consumers.airflow.metrics import ForwarderMetrics
from assetbus.consumers.errors import ConsumerError
from assetbus.consumers.observe.service import Service
from assetbus.consumers.storage import create_engine, translated
from assetbus.consumers.storage.forwarded import (
    INTENT,
    POSTED,
    REFUSED,
    LedgerEntry,
    claim_intent,
    finish_entry,
    note_attempt,
    take_lease,
)
from assetbus.producers.kafka.retry import retry_until
from assetbus.producers.kafka.shell import ServiceShell
from assetbus.producers.kafka.topics import core_specs
from assetbus.schemas import AssetEvent
from assetbus.schemas.codecs import decode_event

log = logging.getLogger("assetbus.airflow.forwarder")

EXTRA_KEY = "assetbus"
"""The key of `extra` in Airflow that holds what assetbus knows of the event (reserved: an emitter's own
`assetbus` key is replaced)."""


class EntryLeased(ConsumerError):
    """Another forwarder holds the lease of the event's intent (a rebalance): wait for it to finish or run out."""

    retriable = True


def airflow_extra(event: AssetEvent) -> dict[str, Any]:
    """The `extra` of the event's Airflow asset event: the emitter's extra and `extra["assetbus"]`."""
    return {**event.extra, EXTRA_KEY: {
        "event_id": event.event_id, "dedupe_key": event.dedupe_key, "command_id": str(event.command_id),
        "partition_date": event.partition_date.isoformat() if event.partition_date else None,
        "stored_at": event.timestamp.isoformat(),
        "source": event.source.model_dump(mode="json"),  # every field, None included
    }}


def assetbus_event_id(airflow_event: dict[str, Any]) -> int | None:
    """The assetbus event id an Airflow asset event carries (None: not one the forwarder posted)."""
    extra = airflow_event.get("extra") or {}
    ours = extra.get(EXTRA_KEY) if isinstance(extra, dict) else None
    value = ours.get("event_id") if isinstance(ours, dict) else None
    return value if isinstance(value, int) else None


class AirflowAssets:
    """Airflow's asset id of an assetbus asset (same name and URI): known ids kept, unknown assets asked
    again after `refresh_s`."""

    def __init__(self, airflow: AirflowClient, refresh_s: float) -> None:
        self._airflow = airflow
        self._refresh_s = refresh_s
        self._known: dict[tuple[str, str], int] = {}
        self._unknown: dict[tuple[str, str], float] = {}

    async def id_of(self, name: str, uri: str) -> int | None:
        key = (name, uri)
        if key in self._known:
            return self._known[key]
        if time.monotonic() - self._unknown.get(key, float("-inf")) < self._refresh_s:
            return None
        found = await self._airflow.pages("/assets", "assets", params={"name_pattern": name})
        for item in found:
            if item.get("name") == name and item.get("uri") == uri:
                self._known[key] = int(item["id"])
                self._unknown.pop(key, None)
                return self._known[key]
        self._unknown[key] = time.monotonic()
        return None

    def forget(self, name: str, uri: str) -> None:
        self._known.pop((name, uri), None)


class AirflowForwarder(Service):
    """`async with AirflowForwarder(config) as forwarder: await forwarder.run_forever()`."""

    def __init__(self, config: ForwarderConfig, *, engine: AsyncEngine | None = None,
                 metrics: ForwarderMetrics | None = None, airflow: AirflowClient | None = None) -> None:
        self.config: ForwarderConfig = config
        self.log = log
        self.metrics: ForwarderMetrics = metrics or ForwarderMetrics()
        self._owned_engine = engine is None
        self._engine = engine or create_engine(config.database_url, pool_size=config.concurrency + 2)
        self._airflow = airflow or AirflowClient(config.airflow)
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """This process's name on the leases it takes."""
        self._assets = AirflowAssets(self._airflow, config.asset_refresh_s)
        self._wanted = frozenset(config.assets)
        self._bridge_served: frozenset[str] = frozenset()
        self._bridge_served_read_at = float("-inf")
        self._gate = asyncio.Semaphore(config.concurrency)
        self._retry = config.retry_policy()
        self.shell: ServiceShell[Sequence[Any]] = ServiceShell(
            config.kafka, config.consumer_settings(config.topics.asset_events), self._on_batch, metrics=self.metrics,
            log=log, name="assetbus-airflow-forwarder", refusals=self.refusals)

    async def dependencies(self, stack: AsyncExitStack) -> None:
        stack.push_async_callback(self._airflow.aclose)
        await self.wait_for(stack, self.config, engine=self._engine, owned_engine=self._owned_engine,
                            required=core_specs(self.config.topics, only=[self.config.topics.asset_events]))

    async def _on_batch(self, records: Sequence[Any]) -> None:
        """One asset's events in order; different assets at once (up to `concurrency`)."""
        per_asset: dict[str, list[AssetEvent]] = {}
        for record in records:
            try:
                event = decode_event(record.value)
            except ValueError as error:  # not an asset event: nothing to forward, and no reason to stop
                log.error("skipping an unreadable asset event at %s/%s: %s", record.partition, record.offset, error)
                continue
            per_asset.setdefault(event.asset.name, []).append(event)
        await asyncio.gather(*(self._asset(events) for events in per_asset.values()))

    async def _asset(self, events: list[AssetEvent]) -> None:
        async with self._gate:
            for event in events:
                outcome = await self.forward(event)
                self.metrics.events.labels(outcome=outcome).inc()

    async def forward(self, event: AssetEvent) -> str:
        """Make sure the event exists in Airflow once; its outcome (see `ForwarderMetrics.events`)."""
        if self._wanted and event.asset.name not in self._wanted:
            return "skipped"
        if event.asset.name in await self._bridge_served_assets():
            return "bridge_served"  # the bridge starts its DAGs' runs: a forwarded event would start a second
        asset_id = await retry_until(lambda: self._assets.id_of(event.asset.name, event.asset.uri), self._retry,
                                     what=f"asset {event.asset.name} in Airflow",
                                     retriable=lambda error: isinstance(error, AirflowError),
                                     on_retry=self._airflow_failed)
        if asset_id is None:
            return "unknown_asset"
        async with translated(), self._engine.begin() as conn:
            fresh = await claim_intent(conn, event.event_id, asset_id)
        uncertain = not fresh  # an intent written earlier: its POST may have reached Airflow

        async def attempt() -> str:
            nonlocal uncertain
            try:
                # each step with the database is a short transaction of its own; Airflow is called between them
                entry = await self._lease(event.event_id)
                if entry.state != INTENT:
                    return "existing"
                if uncertain:
                    found = await self._search(asset_id, event.event_id, entry.created_at)
                    if found is not None:
                        await self._finish(event.event_id, POSTED, found)
                        log.info("event %s was in Airflow already (asset event %s)", event.event_id, found)
                        return "found"
                    if (await self._lease(event.event_id)).state != INTENT:  # renewed for the POST
                        return "existing"
                uncertain = True  # from here on, a failure leaves it open whether Airflow has the event
                try:
                    airflow_id = await self._post(asset_id, event)
                except (AirflowRefused, AirflowNotFound) as error:
                    if isinstance(error, AirflowNotFound):
                        self._assets.forget(event.asset.name, event.asset.uri)
                    await self._finish(event.event_id, REFUSED, detail=str(error)[:1000])
                    self.metrics.airflow_errors.labels(kind="refused").inc()
                    log.error("Airflow refused event %s of %s: %s", event.event_id, event.asset.name, error)
                    return "refused"
                await self._finish(event.event_id, POSTED, airflow_id)
            except AirflowError as error:
                with contextlib.suppress(Exception):  # the ledger notes the failure; the retry does not depend on it
                    async with translated(), self._engine.begin() as conn:
                        await note_attempt(conn, event.event_id, str(error))
                raise
            self.metrics.delay_seconds.observe(max(0.0, (datetime.now(UTC) - event.timestamp).total_seconds()))
            return "posted"

        return await retry_until(attempt, self._retry, what=f"forwarding event {event.event_id} of "
                                 f"{event.asset.name} to Airflow",
                                 retriable=lambda error: isinstance(error, AirflowError | EntryLeased),
                                 on_retry=self._airflow_failed)

    async def _bridge_served_assets(self) -> frozenset[str]:
        """The assets that DAGs served by the Airflow bridge wait on (their rules written from Airflow), read
        from the database at most every `asset_refresh_s`."""
        if time.monotonic() - self._bridge_served_read_at >= self.config.asset_refresh_s:
            async with translated(), self._engine.connect() as conn:
                self._bridge_served = frozenset(await bridge_served_assets(conn))
            self._bridge_served_read_at = time.monotonic()
        return self._bridge_served

    async def _lease(self, event_id: int) -> LedgerEntry:
        """The event's ledger entry, its intent leased to this process (EntryLeased: another holds it)."""
        async with translated(), self._engine.begin() as conn:
            entry = await take_lease(conn, event_id, self._owner, self.config.lease_s)
        if entry is None:
            raise EntryLeased(f"another forwarder holds the lease of event {event_id}")
        return entry

    async def _finish(self, event_id: int, state: str, airflow_event_id: int | None = None,
                      detail: str | None = None) -> None:
        async with translated(), self._engine.begin() as conn:
            await finish_entry(conn, event_id, state, airflow_event_id, detail)

    def _airflow_failed(self, error: BaseException, delay: float) -> None:
        if isinstance(error, EntryLeased):
            log.info("%s; trying again in %.1fs", error, delay)
            return
        kind = error_kind(error)
        self.metrics.airflow_errors.labels(kind=kind).inc()
        log.warning("Airflow failed (%s), retrying in %.1fs: %s", kind, delay, error)

    async def _post(self, asset_id: int, event: AssetEvent) -> int:
        body: dict[str, Any] = {"asset_id": asset_id, "extra": airflow_extra(event)}
        if event.partition_key is not None:
            body["partition_key"] = event.partition_key
        created = (await self._airflow.request("POST", "/assets/events", json=body)).json()
        return int(created["id"])

    async def _search(self, asset_id: int, event_id: int, since: datetime) -> int | None:
        """Airflow's id of the asset event carrying `event_id`, posted after the intent (less the slack)."""
        start = since - timedelta(seconds=self.config.search_slack_s)
        items = await self._airflow.pages("/assets/events", "asset_events", params={
            "asset_id": asset_id, "timestamp_gte": start.isoformat(), "order_by": "timestamp"})
        for item in items:
            if assetbus_event_id(item) == event_id:
                return int(item["id"])
        return None
