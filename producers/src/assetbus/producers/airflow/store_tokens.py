"""Short-lived state tokens the state store backend mints in Airflow's api-server, with `ASSETBUS_TOKEN_SIGNING_KEY`
(optional `ASSETBUS_TOKEN_KEY_ID`) or local mode's `ASSETBUS_TOKEN_SECRET`; what they may do, and why:
docs/security.md, "Airflow's state store backend".
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from assetbus.producers.errors import EmitterError
from assetbus.producers.signing import SigningKey
from assetbus.producers.tokens import TokenKey, issue_token
from assetbus.schemas import SCOPE_TASK_MAPPED, SCOPE_TASK_SELF, Provenance, SourceKind

ENV_SIGNING_KEY = "ASSETBUS_TOKEN_SIGNING_KEY"
ENV_KEY_ID = "ASSETBUS_TOKEN_KEY_ID"
ENV_SECRET = "ASSETBUS_TOKEN_SECRET"
DEFAULT_TTL_S = 300
RENEW_BEFORE_S = 60
STATE_TRY_NUMBER = 1
"""Airflow's scopes name a task instance, not a try; state is shared by its tries, so tokens name try 1."""
_CACHE_LIMIT = 4096

TaskIdentity = tuple[str, str, str, int]
"""(dag_id, run_id, task_id, map_index)"""


class MissingSigningKey(EmitterError, ValueError):
    """The backend was given no key to mint its tokens with."""


def signing_key_from_env() -> TokenKey:
    """`ASSETBUS_TOKEN_SIGNING_KEY` (PEM file, EdDSA or RS256), else local mode's `ASSETBUS_TOKEN_SECRET`."""
    path = os.environ.get(ENV_SIGNING_KEY)
    if path:
        return SigningKey.from_file(Path(path), kid=os.environ.get(ENV_KEY_ID, ""))
    secret = os.environ.get(ENV_SECRET)
    if secret:
        return secret
    raise MissingSigningKey(f"the assetbus state store backend mints its tokens with {ENV_SIGNING_KEY} (a PEM "
                            f"private key whose public half is in the assetbus API's JWKS) or, in local mode, "
                            f"{ENV_SECRET}: set one in Airflow's API server environment")


class StateTokens:
    """`tokens.for_task((dag_id, run_id, task_id, map_index))`: a cached `ti:self` token for that instance."""

    def __init__(self, key: TokenKey) -> None:
        self._key = key
        self._cache: dict[TaskIdentity, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def for_task(self, identity: TaskIdentity) -> str:
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(identity)
            if cached is not None and cached[1] - RENEW_BEFORE_S > now:
                return cached[0]
        dag_id, run_id, task_id, map_index = identity
        source = Provenance(kind=SourceKind.TASK, dag_id=dag_id, run_id=run_id, task_id=task_id,
                            map_index=map_index, try_number=STATE_TRY_NUMBER)
        token = issue_token(self._key, source, ttl_seconds=DEFAULT_TTL_S,
                            scope=f"{SCOPE_TASK_SELF} {SCOPE_TASK_MAPPED}", publish=[])
        with self._lock:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[identity] = (token, now + DEFAULT_TTL_S)
        return token
