"""`InMemoryEmitter`: a test double for users' unit tests, with the emitter's API and no Kafka (docs/emitting.md,
"Test a task without Kafka").

It answers like the persister: the same client-side checks, token/body agreement, registered assets by name
*and* URI, and the dedupe scopes (a repeated dedupe key in the same task, across tries, is a `duplicate` naming
the first event; the same command sent again is `accepted` with its event, as it was the first time).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime

import jwt
from typing_extensions import Unpack

from assetbus.producers.context import EmissionContext, task_context
from assetbus.producers.errors import raise_for_rejection
from assetbus.producers.kafka.types import Lifecycle
from assetbus.producers.options import SendOptions
from assetbus.producers.tokens import DEFAULT_AUDIENCE, dag_token, source_of, task_token
from assetbus.producers.validation import check_asset
from assetbus.producers.wire import EmissionRequest, command_encoder, prepare
from assetbus.schemas import (
    AssetEvent,
    AssetRef,
    EmissionCommand,
    ErrorCode,
    Provenance,
    Receipt,
    ReceiptStatus,
    Topics,
)
from assetbus.schemas.codecs import CommandEncoder
from assetbus.schemas.compat import UTC


class _Transport:
    def __init__(self, owner: InMemoryEmitter) -> None:
        self._owner = owner

    def submit(self, token: str, request: EmissionRequest) -> concurrent.futures.Future[Receipt]:
        future: concurrent.futures.Future[Receipt] = concurrent.futures.Future()
        future.set_result(self._owner.answer(self._owner.encoder(token).command(request)))
        return future

    async def asubmit(self, token: str, request: EmissionRequest) -> asyncio.Future[Receipt]:
        return await self._owner.submit(self._owner.encoder(token).command(request))


class InMemoryEmitter(Lifecycle):
    """Records every command and answers it at once. `registered=None` accepts any asset."""

    def __init__(self, *, registered: Iterable[object] | None = None, token: str | None = None,
                 secret: str | None = None) -> None:
        self.secret = secret or secrets.token_urlsafe(32)
        self.token = token or task_token(self.secret, "test_dag", "test_run", "test_task")
        self.registered = None if registered is None else {check_asset(a) for a in registered}
        self.producer_id = "in-memory"
        self.topics = Topics()
        self.commands: list[EmissionCommand] = []
        self.receipts: list[Receipt] = []
        self.events: list[AssetEvent] = []
        self.transport = _Transport(self)
        self._rejections: dict[str, tuple[ErrorCode, str]] = {}
        self._stored: dict[tuple[str, str, str], AssetEvent] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def source(self) -> Provenance:
        return source_of(self.token)

    def encoder(self, token: str) -> CommandEncoder:
        return command_encoder(self.producer_id, self.topics.receipts, token)

    # -- contexts: run code as a task or a DAG-run callback ---------------------------------
    @contextmanager
    def task(self, dag_id: str = "test_dag", run_id: str = "test_run", task_id: str = "test_task", *,
             map_index: int = -1, try_number: int = 1,
             outlets: Iterable[object] | None = None) -> Iterator[EmissionContext]:
        """Run the block as this task attempt; `Asset.emit()` inside it lands here. `outlets` become the
        token's publication policy (None: any registered asset)."""
        token = task_token(self.secret, dag_id, run_id, task_id, map_index=map_index, try_number=try_number,
                           publish="*" if outlets is None else outlets)
        with task_context(token, transport=self.transport) as context:
            yield context

    @contextmanager
    def dag_run(self, dag_id: str = "test_dag", run_id: str = "test_run") -> Iterator[EmissionContext]:
        """Run the block as a DAG-level callback of this run (events without task fields)."""
        with task_context(dag_token(self.secret, dag_id, run_id), transport=self.transport) as context:
            yield context

    def reject(self, asset: object, code: ErrorCode, message: str = "rejected by the test") -> None:
        """Answer every later emission of `asset` with a rejection of this code."""
        self._rejections[check_asset(asset).name] = (code, message)

    def emitted(self, asset: object) -> list[AssetEvent]:
        """The stored events of one asset, in order."""
        name = check_asset(asset).name
        return [event for event in self.events if event.asset.name == name]

    # -- the AsyncEmitter API (and its `start`, `stop` and `async with`, from Lifecycle) -------------
    def command(self, asset: AssetRef, **options: Unpack[SendOptions]) -> EmissionCommand:
        return self.encoder(self.token).command(prepare(asset, **options))

    async def emit(self, asset: AssetRef, *, raise_on_reject: bool = True,
                   **options: Unpack[SendOptions]) -> Receipt:
        receipt = await self.send(self.command(asset, **options))
        return raise_for_rejection(receipt) if raise_on_reject else receipt

    async def emit_nowait(self, asset: AssetRef, **options: Unpack[SendOptions]) -> asyncio.Future[Receipt]:
        return await self.submit(self.command(asset, **options))

    async def submit(self, command: EmissionCommand) -> asyncio.Future[Receipt]:
        future: asyncio.Future[Receipt] = asyncio.get_running_loop().create_future()
        future.set_result(self.answer(command))
        return future

    async def send(self, command: EmissionCommand) -> Receipt:
        return self.answer(command)

    async def flush(self) -> None:
        return None

    async def drain(self, timeout_s: float | None = None) -> None:
        return None

    # -- the persister's answer ---------------------------------------------------------------
    def answer(self, command: EmissionCommand) -> Receipt:
        with self._lock:
            self.commands.append(command)
            receipt = self._decide(command)
            self.receipts.append(receipt)
            return receipt

    def _decide(self, command: EmissionCommand) -> Receipt:
        def rejected(code: ErrorCode, message: str) -> Receipt:
            return Receipt(correlation_id=command.command_id, status=ReceiptStatus.REJECTED,
                           asset_name=command.asset.name, error_code=code, error_message=message)

        try:
            jwt.decode(command.token, self.secret, algorithms=["HS256"], audience=DEFAULT_AUDIENCE)
        except jwt.PyJWTError as error:
            return rejected(ErrorCode.UNAUTHORIZED, f"token is invalid: {error}")
        if source_of(command.token) != command.source:
            return rejected(ErrorCode.UNAUTHORIZED, "the body claims another source than the token names")
        if command.asset.name in self._rejections:
            return rejected(*self._rejections[command.asset.name])
        if self.registered is not None and command.asset not in self.registered:
            return rejected(ErrorCode.ASSET_NOT_FOUND, f"no asset {command.asset.name!r} ({command.asset.uri})")
        scope = command.source.dedupe_scope() if command.dedupe_key else "command"
        key = command.dedupe_key or str(command.command_id)
        event = self._stored.get((command.asset.name, scope, key))
        status = ReceiptStatus.ACCEPTED
        if event is not None and event.command_id != command.command_id:
            status = ReceiptStatus.DUPLICATE  # another command's event (the same command again gets its own)
        if event is None:
            event = AssetEvent(event_id=next(self._ids), asset=command.asset, extra=command.extra,
                               partition_key=command.partition_key, partition_date=command.partition_date,
                               dedupe_key=key, command_id=command.command_id, source=command.source,
                               timestamp=datetime.now(UTC))
            self._stored[(command.asset.name, scope, key)] = event
            self.events.append(event)
        return Receipt(correlation_id=command.command_id, status=status, event_id=event.event_id,
                       timestamp=event.timestamp, asset_name=command.asset.name, dedupe_key=key)
