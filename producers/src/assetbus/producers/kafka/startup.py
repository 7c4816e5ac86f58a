"""Services wait for Kafka at start-up instead of crashing with a traceback (docs/architecture.md, "The Kafka toolkit").

The broker is probed with the retry policy; past `timeout_s`, `StartupTimeout` (exit code 75) carries the one
line to print. A fault that waiting cannot fix ends the wait at once: aiokafka keeps only "Unable to bootstrap"
of a failed TLS handshake or SASL authentication, so the wait asks the first broker itself why
(`BrokerNotTrusted`, `CredentialsRefused`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Iterable

from aiokafka.conn import create_conn
from aiokafka.errors import (
    AuthenticationFailedError,
    KafkaConnectionError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.errors import KafkaToolkitError
from assetbus.producers.kafka.oauth import EXIT_CREDENTIALS_REFUSED
from assetbus.producers.kafka.retry import RetryPolicy, RetryTimeout, retry_until
from assetbus.producers.kafka.topics import TopicSpec, admin_client, require_topics

__all__ = ["EXIT_BROKER_NOT_TRUSTED", "EXIT_CREDENTIALS_REFUSED", "EXIT_STARTUP_TIMEOUT", "BrokerNotTrusted",
           "CredentialsRefused", "StartupTimeout", "startup_policy", "wait_for_kafka"]

EXIT_STARTUP_TIMEOUT = 75
"""Exit code of a service that gave up waiting for Kafka or PostgreSQL (sysexits EX_TEMPFAIL)."""


class StartupTimeout(KafkaToolkitError):
    """A dependency was still unreachable when the start-up timeout passed. `str()` is the one line to print."""

    retriable = True
    exit_code = EXIT_STARTUP_TIMEOUT


EXIT_BROKER_NOT_TRUSTED = 5
"""Exit code of a service whose broker's certificate fails verification (the CLI's `KAFKA_UNREACHABLE`)."""


class BrokerNotTrusted(KafkaToolkitError):
    """A broker's TLS certificate failed verification (another CA, a host name it does not name). `str()` is
    the one line to print."""

    exit_code = EXIT_BROKER_NOT_TRUSTED


class CredentialsRefused(KafkaToolkitError):
    """The broker refused the SASL user name and password (SCRAM or PLAIN). `str()` is the one line to print;
    it names the user and the mechanism, never the password."""

    exit_code = EXIT_CREDENTIALS_REFUSED


async def _credentials_refusal(connection: KafkaConnection, timeout_s: float = 10.0) -> str | None:
    """Why the first broker refuses `connection`'s SASL user name and password, or None (it accepts them, the
    connection uses no password, or the broker cannot be reached to tell)."""
    if connection.sasl_mechanism in (None, "OAUTHBEARER"):
        return None  # OAuth's refusals come from the identity provider: `OAuthCredentialsRefused`
    kwargs = connection.client_kwargs()
    host, _, port = connection.bootstrap_servers[0].rpartition(":")
    try:
        conn = await create_conn(host.strip("[]"), int(port), request_timeout_ms=int(timeout_s * 1000),
                                 ssl_context=kwargs.get("ssl_context"), security_protocol=kwargs["security_protocol"],
                                 sasl_mechanism=kwargs["sasl_mechanism"],
                                 sasl_plain_username=kwargs["sasl_plain_username"],
                                 sasl_plain_password=kwargs["sasl_plain_password"])
    except (SaslAuthenticationFailed, AuthenticationFailedError, UnsupportedSaslMechanismError) as error:
        return str(error)
    except Exception:  # unreachable, or a TLS fault (`_certificate_refusal` tells that one): waiting may help
        return None
    conn.close()
    return None


async def _certificate_refusal(connection: KafkaConnection, timeout_s: float = 5.0) -> str | None:
    """Why the first broker's certificate fails verification under `connection`'s TLS settings, or None (it
    passes, or the broker cannot be reached to tell)."""
    context = connection.ssl_context()
    if context is None:
        return None
    host, _, port = connection.bootstrap_servers[0].rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port), ssl=context), timeout_s)
    except ssl.SSLCertVerificationError as error:
        return error.verify_message or str(error)
    except (OSError, asyncio.TimeoutError):
        return None
    writer.close()
    with contextlib.suppress(OSError, asyncio.TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), timeout_s)
    return None


def startup_policy(timeout_s: float, *, initial_s: float = 0.5, max_s: float = 5.0) -> RetryPolicy:
    return RetryPolicy(initial_s=initial_s, max_s=max(initial_s, max_s), timeout_s=timeout_s)


def _kafka_retriable(error: BaseException) -> bool:
    if isinstance(error, KafkaToolkitError):  # refused OAuth credentials, say
        return error.retriable
    return not isinstance(error, AuthenticationFailedError | UnsupportedSaslMechanismError | ssl.SSLError)


async def wait_for_kafka(connection: KafkaConnection, policy: RetryPolicy, log: logging.Logger, *,
                         required: Iterable[TopicSpec] = (), migrate_creates: bool = True) -> None:
    """Return once a broker of `connection` answers a metadata request, and the `required` topics are listed
    (`TopicsNotCreated` names those that are not, and what creates them: see `require_topics`)."""

    async def probe() -> None:
        try:
            async with admin_client(connection, request_timeout_ms=5_000) as admin:
                await admin.describe_cluster()
        except KafkaConnectionError:
            refused = await _certificate_refusal(connection)
            if refused is not None:
                raise BrokerNotTrusted(f"Kafka at {connection.describe()} is not trusted: the certificate of "
                                       f"{connection.bootstrap_servers[0]} failed verification ({refused}); check "
                                       "KAFKA_SSL_CAFILE (and KAFKA_SSL_CHECK_HOSTNAME)") from None
            why = await _credentials_refusal(connection)
            if why is not None:
                raise CredentialsRefused(f"Kafka at {connection.describe()} refused the credentials of "
                                         f"{connection.sasl_username!r} ({why}); check KAFKA_SASL_USERNAME and "
                                         "KAFKA_SASL_PASSWORD") from None
            raise

    try:
        await retry_until(probe, policy, what=f"Kafka at {connection.describe()}", retriable=_kafka_retriable,
                          log=log)
    except RetryTimeout as error:
        raise StartupTimeout(f"Kafka at {connection.describe()} is unreachable after {error.waited_s:.0f}s "
                             "(check KAFKA_BOOTSTRAP_SERVERS and the other KAFKA_* settings)") from error
    # part of the start-up wait: a topic created a moment ago may take a moment to be listed by every broker
    await require_topics(connection, required, migrate_creates=migrate_creates,
                         wait_s=min(10.0, policy.timeout_s if policy.timeout_s is not None else 10.0))
