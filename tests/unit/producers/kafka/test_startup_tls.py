"""A broker whose TLS certificate fails verification ends the start-up wait at its first attempt, named; a
trusted one that merely does not answer Kafka is waited for as before."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from assetbus.producers.kafka import KafkaConnection
from assetbus.producers.kafka.startup import (
    BrokerNotTrusted,
    StartupTimeout,
    _certificate_refusal,
    startup_policy,
    wait_for_kafka,
)
from tests.untrusted_tls import UntrustedServer, untrusted_tls_server

log = logging.getLogger("tests.startup")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UntrustedServer]:
    with untrusted_tls_server(tmp_path_factory.mktemp("tls")) as running:
        yield running


def _over_tls(server: UntrustedServer, cafile: str) -> KafkaConnection:
    return KafkaConnection(bootstrap_servers=server.address, security_protocol="SSL", ssl_cafile=cafile)


async def test_an_untrusted_certificate_ends_the_wait_at_once_naming_the_broker_and_the_setting(
        server: UntrustedServer) -> None:
    started = time.monotonic()
    with pytest.raises(BrokerNotTrusted) as raised:
        await wait_for_kafka(_over_tls(server, str(server.other_ca)), startup_policy(30), log)
    assert time.monotonic() - started < 15
    assert str(raised.value) == (f"Kafka at {server.address} over SSL is not trusted: the certificate of "
                                 f"{server.address} failed verification (self-signed certificate); check "
                                 "KAFKA_SSL_CAFILE (and KAFKA_SSL_CHECK_HOSTNAME)")


async def test_a_trusted_broker_that_does_not_answer_kafka_is_waited_for_until_the_timeout(
        server: UntrustedServer) -> None:
    trusted = _over_tls(server, str(server.certificate))
    assert await _certificate_refusal(trusted) is None
    with pytest.raises(StartupTimeout):
        await wait_for_kafka(trusted, startup_policy(2, initial_s=0.2, max_s=0.5), log)
