"""The emitter SDK's exceptions. One root; data in attributes; `retriable` for transient faults.

Client-side faults (nothing was sent): `InvalidEmission` (and `UnknownAsset`), `NoEmissionContext`.
Server-side answers: `EmissionRejected`, one subclass per `ErrorCode`, each carrying the receipt.
Transport faults: `ReceiptTimeout`, `EmitterClosed`, `BrokerUnavailable`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.schemas import ErrorCode, Receipt

if TYPE_CHECKING:
    from assetbus.producers.kafka.connection import KafkaConnection


class EmitterError(Exception):
    """Root of every error the emitter SDK raises."""

    retriable: bool = False


class NotStarted(EmitterError):
    """An SDK object was used before its `start()` (or after its `stop()`); `what` names the object."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not running: call start() first")
        self.what = what


class InvalidEmission(EmitterError):
    """The emission breaks a rule and was not sent. `field` names the argument at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class UnknownAsset(InvalidEmission):
    """The asset is not one the running task declared (the token's publication policy, or the runner's
    outlets); nothing was sent. `code` is the one the persister would have answered."""

    code = ErrorCode.ASSET_NOT_DECLARED

    def __init__(self, name: str, uri: str, declared: list[str], origin: str) -> None:
        super().__init__("asset", f"{self.code.value}: {name!r} ({uri}) is not among the assets this task declares in "
                         f"{origin}: {', '.join(declared) or 'none'}; declare it there (name and URI) or emit a "
                         "declared one")
        self.name = name
        self.uri = uri
        self.declared = declared
        self.origin = origin


class NoEmissionContext(EmitterError):
    """There is no running task or callback to emit as (no token in the environment or context)."""

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(
            "emission outside a running task or callback"
            + (f" ({reason})" if reason else ", e.g. while a DAG file is parsed")
            + ": a runner provides ASSETBUS_TOKEN, or wrap the code in `with task_context(token=...)`")
        self.reason = reason


class ReceiptTimeout(EmitterError):
    """No receipt arrived in time, after all retries. The command may still be stored: emit again
    with the same dedupe key and the receipt will say `duplicate` if it was."""

    retriable = True

    def __init__(self, command_id: str, waited_s: float, attempts: int, last_error: str | None = None,
                 emissions_topic: str | None = None) -> None:
        super().__init__(f"no receipt for command {command_id} after {attempts} attempt(s) and {waited_s:.1f}s"
                         + (f" (last delivery error: {last_error})" if last_error else "")
                         + (f"; is a persister running on this topic prefix (consuming {emissions_topic})? "
                            "`assetbus lag` shows whether one is" if emissions_topic else
                            "; is a persister running on this topic prefix?"))
        self.command_id = command_id
        self.waited_s = waited_s
        self.attempts = attempts
        self.last_error = last_error
        self.emissions_topic = emissions_topic


class EmitterClosed(EmitterError):
    """The emitter is stopped (or stopping); start a new one. Commands already sent are not lost."""

    retriable = True


class BrokerUnavailable(EmitterError):
    """Kafka could not be reached (or its topics are missing) when the emitter started."""

    retriable = True

    connection: KafkaConnection | None = None
    """The Kafka settings the emitter could not start on (`starting`)."""
    topic_prefix: str | None = None
    cause: BaseException | None = None

    @classmethod
    def starting(cls, connection: KafkaConnection, error: BaseException, topic_prefix: str | None = None, *,
                 where: str = "KAFKA_BOOTSTRAP_SERVERS and the other KAFKA_* variables") -> BrokerUnavailable:
        """The error for an emitter that could not start on `connection` (described without secrets) for
        `topic_prefix`; `where` says where those settings came from."""
        prefix = f" for topic prefix {topic_prefix!r}" if topic_prefix is not None else ""
        found = cls(f"cannot start the emitter on {connection.describe()}{prefix} (set by {where}): "
                    f"{type(error).__name__}: {error}")
        found.connection, found.topic_prefix, found.cause = connection, topic_prefix, error
        return found


class EmissionRejected(EmitterError):
    """The persister answered `rejected`; `code` says why (switch on it or on the subclass). A subclass that names
    its code in its class statement (`class InvalidCommand(EmissionRejected, code=...)`) is the one `REJECTIONS`
    holds for it."""

    code: ErrorCode = ErrorCode.INTERNAL

    def __init_subclass__(cls, *, code: ErrorCode | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
            REJECTIONS[code] = cls

    def __init__(self, receipt: Receipt) -> None:
        code = receipt.error_code or ErrorCode.INTERNAL
        super().__init__(f"{code.value}: {receipt.error_message or 'rejected'}")
        self.receipt = receipt
        self.code = code
        self.retriable = code is ErrorCode.INTERNAL


REJECTIONS: dict[ErrorCode, type[EmissionRejected]] = {}


class InvalidCommand(EmissionRejected, code=ErrorCode.INVALID_COMMAND):
    """`invalid_command`: the command breaks the wire contract."""


class UnsupportedSchemaVersion(EmissionRejected, code=ErrorCode.UNSUPPORTED_SCHEMA_VERSION):
    """`unsupported_schema_version`: the persister does not read this contract version."""


class AssetNotFound(EmissionRejected, code=ErrorCode.ASSET_NOT_FOUND):
    """`asset_not_found`: no active asset is registered with that name *and* URI."""


class Unauthorized(EmissionRejected, code=ErrorCode.UNAUTHORIZED):
    """`unauthorized`: the token is forged or expired, or the body claims another source."""


class AttemptEnded(Unauthorized, code=ErrorCode.ATTEMPT_ENDED):
    """`attempt_ended`: the token's attempt ended (past its callbacks' grace) before the token was used."""


class InsufficientScope(EmissionRejected, code=ErrorCode.INSUFFICIENT_SCOPE):
    """`insufficient_scope`: the token is valid but lacks the `emit` scope."""


class AssetNotDeclared(EmissionRejected, code=ErrorCode.ASSET_NOT_DECLARED):
    """`asset_not_declared`: the token's publication policy does not name the asset (the message does)."""


class InvalidPartition(EmissionRejected, code=ErrorCode.INVALID_PARTITION):
    """`invalid_partition`: the partition arguments break the rules."""


class ExtraTooLarge(EmissionRejected, code=ErrorCode.EXTRA_TOO_LARGE):
    """`extra_too_large`: `extra` is larger than the limit."""


class InternalError(EmissionRejected, code=ErrorCode.INTERNAL):
    """`internal`: the service failed on this command; emitting again with the same dedupe key is safe."""


def rejection_error(receipt: Receipt) -> EmissionRejected:
    """The typed exception for a rejected receipt (`EmissionRejected` itself for an unknown code)."""
    return REJECTIONS.get(receipt.error_code or ErrorCode.INTERNAL, EmissionRejected)(receipt)


def raise_for_rejection(receipt: Receipt) -> Receipt:
    """Return the receipt if it is accepted or duplicate; raise its typed `EmissionRejected` otherwise."""
    if receipt.rejected:
        raise rejection_error(receipt)
    return receipt
