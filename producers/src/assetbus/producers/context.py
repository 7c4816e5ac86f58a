"""Who is emitting: the running task's or callback's context, from its runner: in the environment (`ASSETBUS_TOKEN`,
the `KAFKA_*` variables, `ASSETBUS_TOPIC_PREFIX`, optionally `ASSETBUS_OUTLETS`: a JSON list of `{"name", "uri"}`
that narrows the token's publication policy on the client) or, winning over it, `with task_context(token=...)` (a
contextvar: it follows asyncio tasks, not threads). The rest, `forbid_emission` included: docs/emitting.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from pydantic import ValidationError

from assetbus.producers.errors import NoEmissionContext, UnknownAsset
from assetbus.producers.kafka.connection import ENV_PREFIX, KafkaConnection, as_connection
from assetbus.producers.tokens import source_of, unverified_claims
from assetbus.producers.validation import check_asset
from assetbus.producers.wire import EmissionRequest
from assetbus.schemas import ANY_ASSET, AssetRef, Provenance, Receipt, Topics

ENV_TOKEN = "ASSETBUS_TOKEN"
ENV_TOPIC_PREFIX = "ASSETBUS_TOPIC_PREFIX"
ENV_OUTLETS = "ASSETBUS_OUTLETS"


class Transport(Protocol):
    """Where a context's emissions go: Kafka through the process's emitter, or a test double."""

    def submit(self, token: str, request: EmissionRequest) -> concurrent.futures.Future[Receipt]:
        """Hand over (blocking while the in-flight bound is reached); the future gets the receipt."""
        ...

    async def asubmit(self, token: str, request: EmissionRequest) -> asyncio.Future[Receipt]:
        """The same from a coroutine, without blocking its event loop."""
        ...


@dataclass(frozen=True)
class EmissionContext:
    """The identity and destination of emissions made by the running task or callback."""

    token: str = field(repr=False)
    kafka: KafkaConnection = field(default_factory=KafkaConnection)
    topics: Topics = field(default_factory=Topics)
    outlets: frozenset[AssetRef] | None = None
    outlets_origin: str = "task_context(outlets=...)"
    """Where `outlets` came from, for the UnknownAsset message."""
    receipt_timeout_s: float | None = None
    attempts: int | None = None
    transport: Transport | None = None

    @property
    def source(self) -> Provenance:
        """The task attempt or DAG run the token names."""
        return source_of(self.token)

    def check_outlet(self, asset: AssetRef) -> None:
        """Refuse an asset the token's publication policy does not declare, as the persister would
        (and, if the runner narrowed it further with `outlets`, one outside those)."""
        policy = publication_policy(self.token)
        if policy is not None and asset not in policy:
            raise UnknownAsset(asset.name, asset.uri, sorted(f"{a.name} ({a.uri})" for a in policy),
                               "the token's `publish` claim (`assetbus token issue --outlet`)")
        if self.outlets is not None and asset not in self.outlets:
            raise UnknownAsset(asset.name, asset.uri, sorted(f"{a.name} ({a.uri})" for a in self.outlets),
                               self.outlets_origin)


@lru_cache(maxsize=64)
def publication_policy(token: str) -> frozenset[AssetRef] | None:
    """The assets the token's signed `publish` claim declares; None when it allows any ("*").

    Read without verifying the signature: the persister verifies, and enforces the same claim.
    """
    claim = unverified_claims(token).get("publish")
    if claim == ANY_ASSET:
        return None
    try:
        return frozenset(AssetRef.model_validate(item) for item in claim or ())
    except (TypeError, ValueError):
        return frozenset()


_current: ContextVar[EmissionContext | str | None] = ContextVar("assetbus_emission_context", default=None)
"""The explicit context of this task or callback, or why emitting is forbidden here (a string)."""


@contextmanager
def task_context(
    token: str | None = None,
    *,
    bootstrap_servers: str | None = None,
    kafka: KafkaConnection | None = None,
    topic_prefix: str | None = None,
    outlets: Iterable[object] | None = None,
    receipt_timeout_s: float | None = None,
    attempts: int | None = None,
    transport: Transport | None = None,
) -> Iterator[EmissionContext]:
    """Run the block as a task (or callback) holding `token`; unset values come from the environment.

    The token's signed publication policy (`publish` claim) says which assets may be emitted; any other
    raises UnknownAsset (code `asset_not_declared`) before anything is sent, as the persister would
    refuse it. `outlets` (Asset handles or AssetRefs) can only narrow that further, on the client.
    """
    base = context_from_environment(os.environ, require_token=False)
    token = token or (base.token if base else None)
    if not token:
        raise NoEmissionContext(f"task_context() got no token and {ENV_TOKEN} is not set")
    source_of(token)  # a malformed token fails here, where the runner sets it up
    context = EmissionContext(
        token=token,
        kafka=kafka or (as_connection(bootstrap_servers) if bootstrap_servers else
                        (base.kafka if base else KafkaConnection())),
        topics=Topics(prefix=topic_prefix) if topic_prefix else (base.topics if base else Topics()),
        outlets=frozenset(check_asset(a) for a in outlets) if outlets is not None else (base.outlets if base else None),
        outlets_origin="task_context(outlets=...)" if outlets is not None or base is None else base.outlets_origin,
        receipt_timeout_s=receipt_timeout_s,
        attempts=attempts,
        transport=transport,
    )
    reset = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(reset)


callback_context = task_context
"""The same context manager, for a callback or notifier runner holding a task or DAG-run token."""


@contextmanager
def forbid_emission(reason: str = "while a DAG file is parsed") -> Iterator[None]:
    """Emitting inside this block raises NoEmissionContext(reason), even with ASSETBUS_TOKEN set."""
    reset = _current.set(reason)
    try:
        yield
    finally:
        _current.reset(reset)


def current_context() -> EmissionContext:
    """The context emissions are made in; raises NoEmissionContext when there is none."""
    explicit = _current.get()
    if isinstance(explicit, EmissionContext):
        return explicit
    if isinstance(explicit, str):
        raise NoEmissionContext(explicit)
    context = context_from_environment(os.environ)
    if context is None:
        raise NoEmissionContext()
    return context


def context_from_environment(environ: Mapping[str, str], *, require_token: bool = True) -> EmissionContext | None:
    """The context a runner put in the environment, or None without ASSETBUS_TOKEN."""
    token = environ.get(ENV_TOKEN, "").strip()
    if not token and require_token:
        return None
    kafka = tuple(environ.get(name, "").strip() for name in _KAFKA_ENV)
    return _parse(token, kafka, environ.get(ENV_TOPIC_PREFIX, "").strip(), environ.get(ENV_OUTLETS, "").strip())


_KAFKA_ENV = tuple(ENV_PREFIX + name.upper() for name in KafkaConnection.model_fields)
"""The variables of the Kafka connection (`KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_SECURITY_PROTOCOL`, ...)."""


@lru_cache(maxsize=32)
def _connection(values: tuple[str, ...]) -> KafkaConnection:
    try:
        return KafkaConnection.from_environ(dict(zip(_KAFKA_ENV, values, strict=True)))
    except ValidationError as error:
        problem = error.errors()[0]
        where = ENV_PREFIX + str(problem["loc"][0]).upper() if problem["loc"] else "the KAFKA_* settings"
        raise NoEmissionContext(f"{where} is not valid: {problem['msg']}") from None


@lru_cache(maxsize=32)
def _parse(token: str, kafka: tuple[str, ...], prefix: str, outlets: str) -> EmissionContext:
    """Environment values parsed once per distinct value (the environment is read on every emit)."""
    declared = None
    if outlets:
        try:
            declared = frozenset(AssetRef.model_validate(item) for item in json.loads(outlets))
        except (ValueError, TypeError) as error:
            raise NoEmissionContext(f"{ENV_OUTLETS} is not a JSON list of {{'name', 'uri'}} objects: {error}") \
                from error
    return EmissionContext(token=token, kafka=_connection(kafka), topics=Topics(prefix=prefix or "assetbus"),
                           outlets=declared, outlets_origin=f"the {ENV_OUTLETS} environment variable")
