"""A refusal by the cluster's authorizer, named: which principal may not do what on which resource; and the
refusals that stop some of a running service's work now (`AccessRefusals`), which its `/readyz` reports until
the work succeeds again (docs/production.md, "Topics and ACLs").
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
)

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import KafkaToolkitError

__all__ = ["EXIT_ACCESS_DENIED", "AccessRefusals", "KafkaAccessDenied", "access_denied", "naming_refusals"]

EXIT_ACCESS_DENIED = 77
"""Exit code of a service the cluster's ACLs refuse (sysexits EX_NOPERM)."""


class KafkaAccessDenied(KafkaToolkitError):
    """The authorizer refused an operation; `str()` is one line naming the missing ACL."""

    exit_code = EXIT_ACCESS_DENIED

    def __init__(self, principal: str, operation: str, resource: str, where: str) -> None:
        super().__init__(f"Kafka at {where} denies {principal} {operation} on {resource}: add that ACL "
                         "(`assetbus topics plan` lists the ACLs of each service)")
        self.principal = principal
        self.operation = operation
        self.resource = resource


def access_denied(error: BaseException, connection: KafkaConnection, *, group_id: str | None = None,
                  topics: tuple[str, ...] = (), operation: str = "Read") -> KafkaAccessDenied | None:
    """The named refusal behind a client's `error` (`operation` on the group, or on the topics the broker named,
    else on `topics`), or None if it is not an authorization error."""
    principal = f"User:{connection.sasl_username}" if connection.sasl_username else "this client"
    if isinstance(error, GroupAuthorizationFailedError):
        named = group_id or next(iter(_named(error)), "?")
        return KafkaAccessDenied(principal, operation, f"group '{named}'", connection.describe())
    if isinstance(error, TopicAuthorizationFailedError):
        names = ", ".join(f"'{name}'" for name in (_named(error) or sorted(topics)))
        return KafkaAccessDenied(principal, operation, f"topic {names or '?'}", connection.describe())
    if isinstance(error, ClusterAuthorizationFailedError) and topics:  # an idempotent producer's InitProducerId
        names = ", ".join(f"'{name}'" for name in sorted(topics))
        return KafkaAccessDenied(principal, operation, f"topic {names} (an idempotent producer starts only with "
                                 "Write on a topic, Kafka 3.0+)", connection.describe())
    return None


def _named(error: KafkaError) -> list[str]:
    """The resource names aiokafka put in an authorization error (a name, or a set of them), if any."""
    found = error.args[0] if error.args else None
    if isinstance(found, str):
        return [found] if found and " " not in found else []
    if isinstance(found, (set, frozenset, list, tuple)):
        return sorted(str(name) for name in found)
    return []


@contextlib.contextmanager
def naming_refusals(connection: KafkaConnection, operation: str, *, topics: tuple[str, ...] = (),
                    group_id: str | None = None) -> Iterator[None]:
    """Re-raise an authorization error of the block as a `KafkaAccessDenied` naming `operation` on the resource."""
    try:
        yield
    except KafkaError as error:
        if (denied := access_denied(error, connection, group_id=group_id, topics=topics,
                                    operation=operation)) is not None:
            raise denied from error
        raise


class AccessRefusals:
    """The refusals that stop some of a service's work now, by the name of the work. Thread-safe: the probes
    read it from their own thread."""

    def __init__(self) -> None:
        self._held: dict[str, KafkaAccessDenied] = {}
        self._lock = threading.Lock()

    def refused(self, work: str, denied: KafkaAccessDenied) -> None:
        with self._lock:
            self._held[work] = denied

    def cleared(self, work: str) -> None:
        with self._lock:
            self._held.pop(work, None)

    def current(self) -> dict[str, KafkaAccessDenied]:
        with self._lock:
            return dict(self._held)

    def noted(self, work: str, error: BaseException | None) -> KafkaAccessDenied | None:
        """After a round of `work`: record the `KafkaAccessDenied` in `error`'s chain (itself, its cause or
        context), if any; None: the round succeeded, clear it."""
        if error is None:
            self.cleared(work)
        seen: set[int] = set()
        while error is not None and id(error) not in seen:
            if isinstance(error, KafkaAccessDenied):
                self.refused(work, error)
                return error
            seen.add(id(error))
            error = error.__cause__ or error.__context__
        return None

    @contextlib.contextmanager
    def watching(self, work: str) -> Iterator[None]:
        """Record a refusal that ends the block (re-raised); a block that completes clears `work`'s refusal."""
        try:
            yield
        except BaseException as error:
            self.noted(work, error)
            raise
        self.cleared(work)

    def detail(self) -> str:
        """One line per refusal: `<work>: <what to add>` (empty when none is held)."""
        return "; ".join(f"{work}: {denied}" for work, denied in sorted(self.current().items()))
