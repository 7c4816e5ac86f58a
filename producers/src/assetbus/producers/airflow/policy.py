"""The provider's cluster policy (`airflow.policy` entry point): in Airflow's dag-processor, each DAG tagged
`assetbus` registers its readiness rule with the assetbus API; docs/airflow.md, "Consumer DAGs declared once, in
Airflow", tells how, and why it never fails a DAG (every problem is one warning).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from airflow.policies import hookimpl

from assetbus.producers.kafka.retry import RetryPolicy

__all__ = ["RULE_PATH", "TAG", "dag_policy", "in_dag_processor", "register_rule"]

TAG = "assetbus"
"""The DAG tag that hands a DAG to assetbus (the server's `consumers.airflow.declared.AIRFLOW_TAG`)."""
RULE_PATH = "/airflow/dags/{dag_id}/rule"
REGISTER_RETRY = RetryPolicy(initial_s=0.2, max_s=1.0, max_attempts=2)
"""A parse must not wait long: two tries of at most 3 s each, then a warning (the next parse tries again)."""
REGISTER_TIMEOUT_S = 3.0

_unreachable: set[str] = set()
"""APIs that did not answer in this process (a parsing process handles one file): its other DAGs do not wait."""

log = logging.getLogger("assetbus.airflow.policy")


def in_dag_processor() -> bool:
    """Whether this process is Airflow's dag-processor (the command and the parsing processes it forks)."""
    return "dag-processor" in sys.argv[1:3]


def register_rule(dag: Any, conn_id: str | None = None) -> dict[str, Any] | None:
    """Register `dag`'s readiness rule with the assetbus API named by the `assetbus` connection; the API's answer,
    or None after logging why not (never raises)."""
    from assetbus.producers.airflow.connection import default_conn_id, worker_access
    from assetbus.producers.api_client import ApiUnavailable, SyncExecutionApi

    dag_id, where = dag.dag_id, "the assetbus API"
    try:
        access = worker_access(conn_id or default_conn_id())
        where = f"the assetbus API at {access.api_url} ({access.source})"
        if access.credential is None:
            why = "no worker credential (the connection's password; `assetbus token worker` mints one)"
        elif access.api_url in _unreachable:
            why = "it did not answer for another DAG of this file"
        else:
            from airflow.serialization.encoders import encode_timetable

            body = {"timetable": encode_timetable(dag.timetable), "description": dag.description or ""}
            with SyncExecutionApi(access.api_url, access.credential, timeout_s=REGISTER_TIMEOUT_S,
                                  retry=REGISTER_RETRY) as api:
                response = api.request("PUT", RULE_PATH.format(dag_id=dag_id), repeatable=True, json=body)
            json_body = response.headers.get("content-type", "").startswith("application/json")
            answer: dict[str, Any] = response.json() if json_body else {}
            if response.status_code == 200:
                log.info("registered the readiness rule of Airflow DAG %s with %s (%s%s)", dag_id, where,
                         answer.get("change"),
                         "" if answer.get("active") else "; served once the bridge sees the DAG tagged in Airflow")
                return answer
            why = (f"{response.status_code} {answer.get('code', '-')}: "
                   f"{answer.get('message', response.text[:300])}")
    except ApiUnavailable as error:
        _unreachable.add(access.api_url)
        why = str(error)
    except Exception as error:  # a policy that raises fails the DAG's import: say it, and let the DAG load
        why = f"{type(error).__name__}: {error}"
    log.warning("cannot register the readiness rule of Airflow DAG %s with %s: %s", dag_id, where, why)
    return None


@hookimpl  # type: ignore[untyped-decorator]  # pluggy's marker: Any where Airflow is not installed
def dag_policy(dag: Any) -> None:
    """Airflow's cluster policy hook: in the dag-processor, register the rule of a DAG tagged `assetbus`."""
    if TAG in (getattr(dag, "tags", None) or ()) and in_dag_processor():
        register_rule(dag)
