"""Who signs the tokens of Airflow attempts: injected at the edge, so the services never import the SDK.

The CLI (`assetbus run api`) passes the SDK's `task_token` / `dag_token` (`assetbus.producers.tokens`)
bound to the minting key (`ASSETBUS_TOKEN_SIGNING_KEY`, or local mode's secret): the key never
reaches this package, and a change of signing scheme behind those functions changes nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Publish = list[dict[str, str]] | Literal["*"]
"""The token's `publish` claim: the assets it may emit to as {"name", "uri"} objects, or "*"."""


class TaskMint(Protocol):
    def __call__(self, dag_id: str, run_id: str, task_id: str, *, map_index: int = -1,
                 try_number: int = 1, ttl_seconds: int = ..., publish: Publish = ...,
                 not_after: int | None = ..., attested: bool = ...) -> str: ...


class DagMint(Protocol):
    def __call__(self, dag_id: str, run_id: str, *, ttl_seconds: int = ..., publish: Publish = ...) -> str: ...


@dataclass(frozen=True)
class Minter:
    """The two token functions the token endpoint signs with."""

    task: TaskMint
    dag: DagMint
