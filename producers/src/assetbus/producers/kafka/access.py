"""A refusal by the cluster's authorizer, named: which principal may not do what on which resource.

A missing ACL is not transient: a consumer that retried it would spin with a warning per fetch. The
shell stops on it instead, and the service exits with one line naming the ACL to add (the ACLs of each
service are listed by `assetbus topics plan`).
"""

from __future__ import annotations

from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import KafkaToolkitError

__all__ = ["EXIT_ACCESS_DENIED", "KafkaAccessDenied", "access_denied"]

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


def access_denied(error: BaseException, connection: KafkaConnection, *, group_id: str,
                  topics: tuple[str, ...]) -> KafkaAccessDenied | None:
    """The named refusal behind a consumer's `error`, or None if it is not an authorization error."""
    principal = f"User:{connection.sasl_username}" if connection.sasl_username else "this client"
    if isinstance(error, GroupAuthorizationFailedError):
        return KafkaAccessDenied(principal, "Read", f"group '{group_id}'", connection.describe())
    if isinstance(error, TopicAuthorizationFailedError):
        names = ", ".join(f"'{name}'" for name in topics)
        return KafkaAccessDenied(principal, "Read", f"topic {names}", connection.describe())
    return None
