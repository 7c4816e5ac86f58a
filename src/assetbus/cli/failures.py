"""Why a command could not work, in one line, with a documented exit code (never a traceback).

Connection faults come from three drivers (asyncpg, SQLAlchemy, aiokafka) as many unrelated types,
often a bare `OSError`; `explain` walks the exception chain and the traceback's frames to tell which
service was unreachable, and names the setting to check.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes of every `assetbus` command (documented in docs/cli.md)."""

    OK = 0
    FAILED = 1
    """The command ran and the answer is negative: not found, conflict, a check failed."""
    USAGE = 2
    """Bad arguments or options (typer/click's own code)."""
    WEAKER_TOPICS = 3
    """`assetbus migrate`: existing topics are weaker than configured (and --accept-weaker-topics was not given)."""
    DATABASE_UNREACHABLE = 4
    """PostgreSQL could not be reached or refused the login (DATABASE_URL)."""
    KAFKA_UNREACHABLE = 5
    """No Kafka broker answered (KAFKA_BOOTSTRAP_SERVERS), or a service found its certificate untrusted
    (KAFKA_SSL_CAFILE)."""
    NOT_MIGRATED = 6
    """The database schema or the topics are missing: run `assetbus migrate`."""
    STARTUP_TIMEOUT = 75
    """`assetbus run <service>`: Kafka or PostgreSQL stayed unreachable for --startup-timeout-s (EX_TEMPFAIL)."""
    ACCESS_DENIED = 77
    """A service the cluster's ACLs refuse; the line names the missing ACL (EX_NOPERM)."""
    TOPICS_NOT_CREATED = 78
    """ASSETBUS_CREATE_TOPICS=false and a topic is missing; the line names it and how to create it (EX_CONFIG)."""


@dataclass(frozen=True)
class Explained:
    code: ExitCode
    message: str


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _where() -> tuple[str, str]:
    """The configured database URL (password hidden) and bootstrap servers, for the message."""
    try:
        from sqlalchemy.engine import make_url

        from assetbus.settings import Settings

        s = Settings()
        return make_url(s.database_url).render_as_string(hide_password=True), s.bootstrap_servers
    except Exception:
        return "DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS"


def explain(error: BaseException) -> Explained | None:
    """A one-line explanation of a connection or setup fault, or None for anything else (a bug)."""
    chain = _chain(error)
    names = {type(e).__name__ for e in chain}
    modules = " ".join(type(e).__module__ for e in chain)
    frames = " ".join(frame.f_code.co_filename for e in chain for frame, _ in traceback.walk_tb(e.__traceback__))
    root, name = chain[-1], type(chain[-1]).__name__
    detail = str(root) if str(root).startswith(name) else f"{name}: {root}".strip().rstrip(":")
    database, kafka = _where()
    if names & {"UndefinedTableError", "UndefinedColumnError"}:
        return Explained(ExitCode.NOT_MIGRATED, f"the database at {database} is not migrated ({detail}); "
                         "run `assetbus migrate`")
    if names & {"InvalidPasswordError", "InvalidAuthorizationSpecificationError", "InvalidCatalogNameError"}:
        return Explained(ExitCode.DATABASE_UNREACHABLE, f"PostgreSQL at {database} refused the connection "
                         f"({detail}); check the user, password and database name in DATABASE_URL")
    if "UnknownTopicOrPartitionError" in names:  # the outermost says which topics (`ServiceShell.start`)
        said = next(str(e) for e in chain if type(e).__name__ == "UnknownTopicOrPartitionError")
        return Explained(ExitCode.NOT_MIGRATED, f"a topic is missing on {kafka} ({said}); run `assetbus migrate`")
    kafka_fault = "aiokafka" in modules or "/aiokafka/" in frames
    if kafka_fault and (names & {"KafkaConnectionError", "KafkaTimeoutError", "NodeNotReadyError",
                                 "RequestTimedOutError"} or any(isinstance(e, OSError) for e in chain)):
        return Explained(ExitCode.KAFKA_UNREACHABLE, f"cannot reach Kafka at {kafka} ({detail}); "
                         "run `assetbus infra up` or set KAFKA_BOOTSTRAP_SERVERS")
    database_fault = "asyncpg" in modules or "/asyncpg/" in frames or "sqlalchemy" in modules
    lost = {"ConnectionDoesNotExistError", "CannotConnectNowError", "TooManyConnectionsError"}
    if database_fault and (any(isinstance(e, OSError) for e in chain) or names & lost):
        return Explained(ExitCode.DATABASE_UNREACHABLE, f"cannot reach PostgreSQL at {database} ({detail}); "
                         "run `assetbus infra up` or set DATABASE_URL")
    return None
