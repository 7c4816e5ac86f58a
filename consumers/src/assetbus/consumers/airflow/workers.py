"""The Airflow worker credential: proof that a token request comes from inside the deployment's workers.

Knowing a running attempt's ids proves nothing: Airflow shows them to every reader of its REST API.
So `POST /airflow/tokens` also needs this credential, a signed token with one scope,
`airflow:worker`. It cannot emit (no `emit`) and cannot touch state (no `ti:self`, and it names no
task). It may ask for the token of an attempt or DAG run that Airflow vouches for; besides, Airflow's
dag-processor registers with it the readiness rules of the DAGs tagged `assetbus` (`PUT
/airflow/dags/{dag_id}/rule`, which the bridge activates only for DAGs Airflow's REST API lists tagged), and
a connection test reads the Kafka and topic prefix the API names to workers (`GET /airflow/kafka`).

It is minted once per deployment (`assetbus token worker`), with the minting key, and kept where
Airflow keeps secrets: the password of the Airflow connection `assetbus_default`, read by the worker
through Airflow's own connection API (so through the deployment's secrets backend).

The tokens a worker gets are signed by a `Minter`, injected at the edge so the services never import the SDK:
the CLI (`assetbus run api`) passes the SDK's `task_token` / `dag_token` (`assetbus.producers.tokens`) bound
to the minting key (`ASSETBUS_TOKEN_SIGNING_KEY`, or local mode's secret): the key never reaches this package,
and a change of signing scheme behind those functions changes nothing here.
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
