"""`GET /airflow/kafka`: the Kafka and topic prefix a worker's emitter falls back on, for connection tests.

A worker whose `assetbus` connection names no Kafka (or no topic prefix) emits to the brokers, under the prefix,
that the API names with each token (`POST /airflow/tokens`). A connection test has no running attempt to ask a
token for, so `AssetbusHook.test_connection()` asks here, with the same worker credential, and then checks that
those brokers answer and hold the prefix's topics: what a task will need. Nothing secret is answered (the token
route answers the same to every worker).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.api.errors import responses
from assetbus.consumers.api.routes.airflow_tokens import airflow_worker, config_of
from assetbus.consumers.api.versioning import version_header

router = APIRouter(prefix="/airflow", tags=["airflow"], dependencies=[Depends(version_header)])


class WorkerKafkaOut(BaseModel):
    """What the API names to a worker with each token."""

    bootstrap_servers: str = Field(description="Kafka bootstrap servers the API itself uses.")
    topic_prefix: str = Field(description="Topic prefix of this assetbus installation.")


@router.get("/kafka", response_model=WorkerKafkaOut, responses=responses(403),
            dependencies=[Depends(airflow_worker)],
            summary="The Kafka brokers and topic prefix the API names to workers (needs the worker credential)")
async def worker_kafka(config: Annotated[ApiConfig, Depends(config_of)]) -> WorkerKafkaOut:
    return WorkerKafkaOut(bootstrap_servers=config.kafka.bootstrap, topic_prefix=config.topics.prefix)
