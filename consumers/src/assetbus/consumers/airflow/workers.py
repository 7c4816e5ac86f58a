"""The Airflow worker credential (docs/airflow.md, "The trust boundary"): a signed token whose one scope,
`airflow:worker`, can neither emit nor touch state. The tokens a worker gets are signed by a `Minter` injected
at the edge (`assetbus run api`), so the minting key never reaches this package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from assetbus.schemas import Provenance, SourceKind

__all__ = ["DEFAULT_WORKER_TTL_SECONDS", "SCOPE_AIRFLOW_WORKER", "WORKER_DAG_ID", "Minter", "Publish", "worker_source",
           "worker_subject"]

SCOPE_AIRFLOW_WORKER = "airflow:worker"
"""The only scope of a worker credential: it may ask `POST /airflow/tokens`, nothing else."""
WORKER_DAG_ID = "airflow:workers"
"""The provenance a worker credential names (a token names one): no DAG can have this id (`:` is not
allowed in Airflow DAG ids), and without `emit` no event is ever stored under it."""
DEFAULT_WORKER_TTL_SECONDS = 90 * 24 * 3600
"""A worker credential lives 90 days unless minted with another lifetime; rotate it before then."""


def worker_source(deployment: str) -> Provenance:
    """The provenance a worker credential carries: the deployment it was minted for, as its run id."""
    return Provenance(kind=SourceKind.DAG, dag_id=WORKER_DAG_ID, run_id=deployment)


def worker_subject(deployment: str) -> str:
    """The `sub` of a worker credential."""
    return f"airflow-worker:{deployment}"


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
