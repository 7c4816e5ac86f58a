"""Where a worker finds the assetbus API and its worker credential: the Airflow connection `assetbus_default`.

The connection (type `assetbus`) is read through Airflow's own connection API (`airflow.sdk.Connection`),
so it comes from the deployment's secrets backend: in a task through the supervisor and Airflow's
execution API, in a DAG-level callback through the dag-processor. Its host is the API's URL, its
password the worker credential (`assetbus token worker`). Airflow masks the password in task logs.

When Airflow has no such connection (or is not installed), the environment is the fallback:
`ASSETBUS_API_URL` and `ASSETBUS_AIRFLOW_WORKER_TOKEN`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONN_ID", "CONN_TYPE", "DEFAULT_API_URL", "ENV_API_URL", "ENV_WORKER_TOKEN", "WorkerAccess",
           "worker_access"]

CONN_ID = "assetbus_default"
CONN_TYPE = "assetbus"
ENV_API_URL = "ASSETBUS_API_URL"
ENV_WORKER_TOKEN = "ASSETBUS_AIRFLOW_WORKER_TOKEN"
DEFAULT_API_URL = "http://127.0.0.1:8321"


@dataclass(frozen=True)
class WorkerAccess:
    """The API a worker asks for tokens, and the credential it proves being a worker with (None: none found)."""

    api_url: str
    credential: str | None = field(default=None, repr=False)
    source: str = "environment"
    """Where they were found: `connection assetbus_default`, or `environment`."""


def _airflow_connection(conn_id: str) -> Any | None:
    """The Airflow connection `conn_id`, or None when Airflow is not installed or does not define it."""
    try:
        from airflow.sdk import Connection
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:
        return None
    try:
        return Connection.get(conn_id)
    except AirflowNotFoundException:
        return None


def _url(connection: Any) -> str | None:
    host = getattr(connection, "host", None)
    if not host:
        return None
    if "://" not in host:
        port = getattr(connection, "port", None)
        host = f"{getattr(connection, 'schema', None) or 'http'}://{host}" + (f":{port}" if port else "")
    return str(host)


def worker_access(conn_id: str = CONN_ID) -> WorkerAccess:
    """Read now (a rotated credential is picked up by the next token request): the connection's host and
    password, each falling back to the environment."""
    connection = _airflow_connection(conn_id)
    env_url = os.environ.get(ENV_API_URL) or DEFAULT_API_URL
    env_credential = os.environ.get(ENV_WORKER_TOKEN) or None
    if connection is None:
        return WorkerAccess(env_url.rstrip("/"), env_credential)
    return WorkerAccess((_url(connection) or env_url).rstrip("/"),
                        getattr(connection, "password", None) or env_credential, f"connection {conn_id}")
