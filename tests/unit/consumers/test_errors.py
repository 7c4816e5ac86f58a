"""One root per package: every error the services raise is a ConsumerError, and using one before start() is typed."""

from __future__ import annotations

import pytest

from assetbus.consumers.api.versioning import UnsupportedVersion, resolve_version
from assetbus.consumers.auth import KeyNotFound, MissingVerificationKeys, TokenError, TokenVerifier
from assetbus.consumers.errors import ConsumerError, NotStarted
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.storage.state import AssetNotRegistered
from assetbus.producers.airflow.store_tokens import MissingSigningKey
from assetbus.producers.errors import EmitterError
from assetbus.producers.errors import NotStarted as SdkNotStarted
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.producers.readiness.ledger import LedgerRefused
from assetbus.schemas import Topics

KAFKA = KafkaConnection(bootstrap_servers=("127.0.0.1:1",))


@pytest.mark.parametrize("error", [TokenError, KeyNotFound, MissingVerificationKeys, UnsupportedVersion,
                                   AssetNotRegistered])
def test_the_auth_and_api_errors_are_consumer_errors(error: type[Exception]) -> None:
    assert issubclass(error, ConsumerError)


def test_the_errors_that_were_value_errors_still_are() -> None:
    with pytest.raises(ValueError, match="Assetbus-API-Version"):
        resolve_version("yesterday")
    with pytest.raises(ValueError):
        TokenVerifier.configured(jwks=None, secret=None)


async def test_a_shell_that_was_never_started_says_so() -> None:
    async def handler(records: object) -> None:
        return None

    shell = ServiceShell(KAFKA, ConsumerSettings(topics=("t",), group_id="g"), handler)
    with pytest.raises(SdkNotStarted, match="call start\\(\\) first"):
        await shell.run_forever()


async def test_a_persister_that_was_never_started_refuses_a_batch() -> None:
    persister = Persister(PersisterConfig(kafka=KAFKA, database_url="postgresql+asyncpg://x@y/z", token_secret="s",
                                          topics=Topics(prefix="never-started"), group_id="g"))
    with pytest.raises(NotStarted) as raised:
        await persister.handle([])
    assert raised.value.what == "the persister"
    await persister.engine.dispose()


@pytest.mark.parametrize("error", [MissingSigningKey, LedgerRefused, SdkNotStarted])
def test_the_sdk_errors_are_emitter_errors(error: type[Exception]) -> None:
    assert issubclass(error, EmitterError)
