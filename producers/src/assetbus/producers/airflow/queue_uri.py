"""The assetbus queue URI of Airflow's `MessageQueueTrigger` (docs/airflow.md, "Event-driven scheduling"): which
readiness topic an AssetWatcher reads, with `AssetbusReadinessTrigger`'s options `conn_id` and `group_id`.

    assetbus://readiness/<dag_id>[?conn_id=<airflow connection>&group_id=<consumer group>]
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from assetbus.producers.errors import EmitterError

SCHEME = "assetbus"
KIND = "readiness"
FORM = "assetbus://readiness/<dag_id>[?conn_id=<connection>&group_id=<consumer group>]"
OPTIONS = ("conn_id", "group_id")
_DAG_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")  # what can name a readiness topic (assetbus.schemas.Topics)


class InvalidQueue(EmitterError, ValueError):
    """An assetbus queue URI (or its MessageQueueTrigger arguments) that cannot name a readiness topic."""

    def __init__(self, queue: str, reason: str) -> None:
        super().__init__(f"assetbus queue {queue!r}: {reason}; expected {FORM}")
        self.queue = queue
        self.reason = reason


def is_assetbus_queue(queue: str) -> bool:
    """Whether `queue` is an assetbus URI (valid or not: a wrong one should fail with InvalidQueue, not as
    a queue no provider recognises)."""
    return queue.partition("://")[0].lower() == SCHEME and "://" in queue


@dataclass(frozen=True)
class ReadinessQueue:
    """The readiness signals of the assetbus consumer DAG `dag_id`, read with `conn_id` in group `group_id`."""

    dag_id: str
    conn_id: str | None = None
    group_id: str | None = None

    def __post_init__(self) -> None:
        if not _DAG_ID.match(self.dag_id):
            raise InvalidQueue(self.uri, f"dag_id {self.dag_id!r} cannot name a readiness topic "
                                         "(1 to 200 of A-Z a-z 0-9 . _ -)")
        for name in OPTIONS:
            if getattr(self, name) == "":
                raise InvalidQueue(self.uri, f"{name} is empty")

    @classmethod
    def parse(cls, queue: str) -> ReadinessQueue:
        """The queue an assetbus URI names; InvalidQueue if it names none."""
        if not is_assetbus_queue(queue):
            raise InvalidQueue(queue, "not an assetbus:// URI")
        parts = urlsplit(queue)
        if parts.fragment:
            raise InvalidQueue(queue, f"a fragment (#{parts.fragment}) means nothing here")
        if parts.netloc != KIND:
            raise InvalidQueue(queue, f"{parts.netloc!r} is not a kind of assetbus queue (the one kind is "
                                      f"{KIND!r})")
        segments = parts.path.split("/")
        if len(segments) != 2 or not segments[1]:
            raise InvalidQueue(queue, "the path must be one consumer DAG id")
        try:
            pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True) if parts.query else []
        except ValueError:
            raise InvalidQueue(queue, f"the query {parts.query!r} is not name=value pairs joined by &") from None
        options: dict[str, str] = {}
        for name, value in pairs:
            if name not in OPTIONS:
                raise InvalidQueue(queue, f"unknown option {name!r} (the options are {', '.join(OPTIONS)})")
            if name in options:
                raise InvalidQueue(queue, f"{name} is given twice")
            options[name] = value
        try:
            return cls(dag_id=segments[1], **options)
        except InvalidQueue as error:  # an empty option, or a dag_id that cannot name a topic
            raise InvalidQueue(queue, error.reason) from None

    @property
    def uri(self) -> str:
        """This queue as an assetbus URI (what `parse` reads back)."""
        query = urlencode({name: getattr(self, name) for name in OPTIONS if getattr(self, name) is not None})
        return f"{SCHEME}://{KIND}/{quote(self.dag_id, safe='')}" + (f"?{query}" if query else "")

    def trigger_kwargs(self, **given: Any) -> dict[str, Any]:
        """`AssetbusReadinessTrigger`'s arguments from this URI, none of which may also be among `given`
        (MessageQueueTrigger's own keyword arguments, which it passes to the trigger next to these)."""
        kwargs = {name: value for name, value in asdict(self).items() if value is not None}
        twice = sorted(set(kwargs) & set(given))
        if twice:
            raise InvalidQueue(self.uri, f"{', '.join(twice)} given both in the URI and as keyword arguments")
        return kwargs
