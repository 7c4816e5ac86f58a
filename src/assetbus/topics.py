"""Explicit topic creation (never broker auto-creation): part of `assetbus migrate` and `infra up`."""

from __future__ import annotations

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from assetbus.schemas import Topics

RETENTION_MS = {"receipts": 24 * 3600 * 1000}
"""Receipts are only useful while an emitter waits; everything else keeps the broker default."""


async def ensure_topics(bootstrap_servers: str, topics: Topics, extra: dict[str, int] | None = None) -> list[str]:
    """Create the core topics (and `extra` ones) that are missing. Returns the names it created."""
    wanted = {**topics.core(), **(extra or {})}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=15000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [name for name in wanted if name not in existing]
        new = [
            NewTopic(name, wanted[name], 1,
                     topic_configs={"retention.ms": str(RETENTION_MS["receipts"])} if name == topics.receipts else {})
            for name in missing
        ]
        if new:
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
        return missing
    finally:
        await admin.close()


async def delete_topics(bootstrap_servers: str, names: list[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        doomed = [n for n in names if n in existing]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()
