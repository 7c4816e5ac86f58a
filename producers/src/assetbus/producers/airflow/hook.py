"""`AssetbusHook`: the `assetbus` connection type (`test_connection()`; its form is declared in the provider
info, `provider.py`) and a hook to emit with.

    from assetbus.producers.airflow.hook import AssetbusHook

    AssetbusHook().emit(orders, partition_key="batch-41", dedupe_key="batch-41")

The connection's fields are described in `connection.py`. `test_connection()` (the UI's and REST API's
Test button with `[core] test_connection = Enabled`, or `airflow connections test`) checks that the API
answers, that it accepts the worker credential, and, when the connection names Kafka, that the brokers
answer and hold the emissions topic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import httpx
from airflow.sdk import BaseHook
from typing_extensions import Unpack

from assetbus.producers.airflow.connection import CONN_TYPE, WorkerAccess, default_conn_id, worker_access
from assetbus.producers.airflow.credentials import _CREDENTIAL_REFUSED, ROUTE, _reason
from assetbus.producers.airflow.emit import aemit, emit
from assetbus.producers.airflow.identity_checks import identity_report
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.options import SendOptions
from assetbus.schemas import Receipt, Topics

PROBE = {"kind": "dag", "dag_id": "assetbus_connection_test", "run_id": "assetbus_connection_test"}
"""A token request for a DAG run that does not exist: the API refuses it as not running (403
`attempt_not_running`) once it has accepted the credential, and with 401 / `insufficient_scope` before."""


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

    def access(self) -> WorkerAccess:
        """The connection as read now: the API, the credential, Kafka and the topic prefix."""
        return worker_access(self.assetbus_conn_id)

    def get_conn(self) -> WorkerAccess:
        return self.access()

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
        """(True, what was checked) or (False, the first problem found)."""
        try:
            access = self.access()
            checked = [self._check_api(access), identity_report()]
            if access.kafka is not None:
                checked.append(_run(_check_kafka(access.kafka, access.topic_prefix)))
        except _Failed as failure:
            return False, str(failure)
        except Exception as error:  # the UI shows the message of whatever went wrong
            return False, f"{type(error).__name__}: {error}"
        return True, "; ".join(checked)

    def _check_api(self, access: WorkerAccess) -> str:
        if access.credential is None:
            raise _Failed(f"connection {self.assetbus_conn_id} has no worker credential (its password): "
                          f"`assetbus token worker` mints one")
        try:
            health = httpx.get(access.api_url + "/healthz", timeout=self.timeout_s)
            probe = httpx.post(access.api_url + ROUTE, json=PROBE, timeout=self.timeout_s,
                               headers={"Authorization": f"Bearer {access.credential}"})
        except httpx.HTTPError as error:
            raise _Failed(f"the assetbus API at {access.api_url} did not answer: {error}") from None
        if health.status_code != 200:
            raise _Failed(f"the assetbus API at {access.api_url} is not healthy: {health.status_code}")
        code, message = _reason(probe)
        if probe.status_code == 401 or code in _CREDENTIAL_REFUSED:
            raise _Failed(f"the assetbus API at {access.api_url} refuses the worker credential: "
                          f"{probe.status_code} {code}: {message}")
        if probe.status_code == 403 and code == "attempt_not_running":
            return f"the assetbus API at {access.api_url} accepts the worker credential"
        raise _Failed(f"the assetbus API at {access.api_url} accepts the worker credential but cannot mint "
                      f"tokens: {probe.status_code} {code}: {message}")


class _Failed(Exception):
    pass


T = TypeVar("T")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code, also where this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _check_kafka(kafka: KafkaConnection, topic_prefix: str | None) -> str:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(**kafka.client_kwargs(), request_timeout_ms=10_000)
    try:
        await asyncio.wait_for(consumer.start(), 20)
        topics = await consumer.topics()
    except (KafkaError, OSError, asyncio.TimeoutError) as error:
        raise _Failed(f"Kafka at {kafka.describe()} did not answer: {type(error).__name__}: {error}") from None
    finally:
        await consumer.stop()
    if topic_prefix is None:
        return f"Kafka at {kafka.describe()} answers"
    emissions = Topics(prefix=topic_prefix).emissions
    if emissions not in topics:
        raise _Failed(f"Kafka at {kafka.describe()} has no topic {emissions} (is the topic prefix "
                      f"{topic_prefix!r} right?)")
    return f"Kafka at {kafka.describe()} answers and holds {emissions}"
