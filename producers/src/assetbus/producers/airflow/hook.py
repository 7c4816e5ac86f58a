"""`AssetbusHook`: the `assetbus` connection type (its form is declared in `provider.py`, its fields read in
`connection.py`) and a hook to emit with: `AssetbusHook().emit(orders, partition_key="batch-41")`. What
`test_connection()` checks: docs/airflow.md, "Configuration": Testing the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx
from airflow.sdk import BaseHook
from typing_extensions import Unpack

from assetbus.producers.airflow.attestation import ROUTE, api_reason
from assetbus.producers.airflow.connection import (
    CONN_TYPE,
    WorkerAccess,
    default_conn_id,
    settings_source,
    worker_access,
)
from assetbus.producers.airflow.credentials import _CREDENTIAL_REFUSED, emitter_settings
from assetbus.producers.airflow.emit import aemit, emit
from assetbus.producers.airflow.identity_checks import identity_report
from assetbus.producers.api_client import SyncExecutionApi
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.periodic import run_async
from assetbus.producers.options import SendOptions
from assetbus.schemas import Receipt, Topics

PROBE = {"kind": "dag", "dag_id": "assetbus_connection_test", "run_id": "assetbus_connection_test"}
"""A token request for a DAG run that does not exist: the API refuses it as not running (403
`attempt_not_running`) once it has accepted the credential, and with 401 / `insufficient_scope` before."""
WORKER_KAFKA = "/airflow/kafka"
"""The API's route naming the Kafka and topic prefix it gives workers with their tokens."""


class AssetbusHook(BaseHook):  # type: ignore[misc]
    """The assetbus API and Kafka named by an `assetbus` connection (default `assetbus_default`)."""

    conn_name_attr = "assetbus_conn_id"
    default_conn_name = "assetbus_default"
    conn_type = CONN_TYPE
    hook_name = "assetbus"

    def __init__(self, assetbus_conn_id: str | None = None, *, timeout_s: float = 10.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.assetbus_conn_id = assetbus_conn_id or default_conn_id()
        self.timeout_s = timeout_s

    def get_conn(self) -> WorkerAccess:
        """The connection as read now: the API, the credential, Kafka and the topic prefix."""
        return worker_access(self.assetbus_conn_id)

    def emit(self, asset: object, *, context: Mapping[str, Any] | None = None, raise_on_reject: bool = True,
             **options: Unpack[SendOptions]) -> Receipt:
        """Emit `asset` (an Airflow Asset) as the running attempt (or a callback's `context`) through this
        connection, and wait for the receipt."""
        return emit(asset, context=context, conn_id=self.assetbus_conn_id, raise_on_reject=raise_on_reject,
                    **options)

    async def aemit(self, asset: object, *, context: Mapping[str, Any] | None = None,
                    raise_on_reject: bool = True, **options: Unpack[SendOptions]) -> Receipt:
        """`emit()` for async task code."""
        return await aemit(asset, context=context, conn_id=self.assetbus_conn_id,
                           raise_on_reject=raise_on_reject, **options)

    def test_connection(self) -> tuple[bool, str]:
        """(True, what was checked) or (False, the first problem found): the API and the worker credential, then
        the Kafka and topic prefix a task's emitter will use, then the triggerer's."""
        try:
            access = self.get_conn()
            checked = [_check_api(access, self.timeout_s), identity_report()]
            checked.append(run_async(_check_kafka(*_emitter_settings(access, self.timeout_s), "a task's emitter")))
            checked.append(run_async(_check_triggerer(self.assetbus_conn_id)))
        except _Failed as failure:
            return False, str(failure)
        except Exception as error:  # the UI shows the message of whatever went wrong
            return False, f"{type(error).__name__}: {error}"
        return True, "; ".join(checked)


class _Failed(Exception):
    pass


def _check_api(access: WorkerAccess, timeout_s: float) -> str:
    """The API answers, accepts the worker credential and mints tokens (it refuses one for a run that does not
    exist only after accepting the credential)."""
    if access.credential is None:
        raise _Failed(f"{access.source} has no worker credential (its password): `assetbus token worker` mints one")
    try:
        health = httpx.get(access.api_url + "/healthz", timeout=timeout_s)
        probe = httpx.post(access.api_url + ROUTE, json=PROBE, timeout=timeout_s,
                           headers={"Authorization": f"Bearer {access.credential}"})
    except httpx.HTTPError as error:
        raise _Failed(f"the assetbus API at {access.api_url} did not answer: {error}") from None
    if health.status_code != 200:
        raise _Failed(f"the assetbus API at {access.api_url} is not healthy: {health.status_code}")
    code, message = api_reason(probe)
    if probe.status_code == 401 or code in _CREDENTIAL_REFUSED:
        raise _Failed(f"the assetbus API at {access.api_url} refuses the worker credential: "
                      f"{probe.status_code} {code}: {message}")
    if probe.status_code == 403 and code == "attempt_not_running":
        return f"the assetbus API at {access.api_url} accepts the worker credential"
    raise _Failed(f"the assetbus API at {access.api_url} accepts the worker credential but cannot mint "
                  f"tokens: {probe.status_code} {code}: {message}")


def _emitter_settings(access: WorkerAccess, timeout_s: float) -> tuple[KafkaConnection, Topics, str]:
    """The Kafka and topics a task's emitter will use, as `credentials` picks them (the connection, this
    process's environment, then what the API names with a token: asked of `GET /airflow/kafka`)."""
    assert access.credential is not None  # checked by _check_api
    with SyncExecutionApi(access.api_url, access.credential, timeout_s=timeout_s) as api:
        response = api.request("GET", WORKER_KAFKA, repeatable=True)
    if response.status_code != 200:
        code, message = api_reason(response)
        raise _Failed(f"the assetbus API at {access.api_url} does not name its Kafka ({WORKER_KAFKA}): "
                      f"{response.status_code} {code}: {message}")
    kafka, prefix = emitter_settings(access, response.json())
    return kafka, Topics(prefix=prefix), settings_source(access)


async def _check_triggerer(conn_id: str) -> str:
    """The Kafka and topic prefix the triggerer's assetbus triggers (AssetWatchers, the partition sensor) read:
    only the connection and the triggerer's environment; none is a note, not a failure (tasks emit without)."""
    from assetbus.producers.airflow.triggers import TriggerSetupError, _kafka_and_topics

    try:
        kafka, topics = await _kafka_and_topics(conn_id)
    except TriggerSetupError as error:
        return f"not for the triggerer: {error}"
    return await _check_kafka(kafka, topics, f"the connection {conn_id} (or the environment)", "the triggerer")


async def _check_kafka(kafka: KafkaConnection, topics: Topics, source: str, who: str) -> str:
    """The brokers answer with these settings and hold the prefix's topics that `who` needs."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(**kafka.client_kwargs("consumer"), request_timeout_ms=10_000)
    try:
        await asyncio.wait_for(consumer.start(), 20)
        found = await consumer.topics()
    except (KafkaError, OSError, asyncio.TimeoutError) as error:
        raise _Failed(f"Kafka at {kafka.describe()}, which {who} will use ({source}), did not answer: "
                      f"{type(error).__name__}: {error}") from None
    finally:
        await consumer.stop()
    missing = [topic for topic in (topics.emissions, topics.receipts, topics.asset_events) if topic not in found]
    if missing:
        raise _Failed(f"Kafka at {kafka.describe()} has no topic {', '.join(missing)}: is the topic prefix "
                      f"{topics.prefix!r} that {who} will use right? ({source}; `assetbus migrate` creates them)")
    return f"{who} reaches Kafka at {kafka.describe()} and the topics of prefix {topics.prefix!r}"
