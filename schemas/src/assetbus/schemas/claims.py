"""What an emitter token says: the provenance it vouches for, its scopes, and what it may publish (the signed
`publish` claim, which the persister and the SDK both read; docs/security.md, "What a token says").
"""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from assetbus.schemas.commands import AssetRef
from assetbus.schemas.provenance import Provenance, task_instance_id

ANY_ASSET: Literal["*"] = "*"
"""The publication policy that allows every registered asset (the persister still checks registration)."""

SCOPE_EMIT = "emit"
"""May emit asset events, over Kafka or HTTP."""
SCOPE_TASK_SELF = "ti:self"
"""May read and write its own task instance's state, and the state of assets it is registered with."""
SCOPE_DAG_SELF = "dag:self"
"""Marks a DAG-run token (callbacks and notifiers of that run)."""
SCOPE_TASK_MAPPED = "ti:mapped"
"""May clear the state of every map index of its task (`all_map_indices=true`). Airflow offers that only on
its core REST API, behind DAG permissions; so only the state store backend in Airflow's api-server, which
Airflow calls from there, mints it. Task tokens never carry it."""
SCOPE_AIRFLOW_ATTESTED = "airflow:attested"
"""An attestation: Airflow's api-server vouches for the task attempt it names, which Airflow verified from the
task's own JWT. It may only be exchanged for that attempt's emission token (`POST /airflow/tokens`)."""


class EmitterClaims(Provenance):
    """The claims of an emitter token (a JWT): provenance, scopes, publication policy, expiry."""

    exp: int = Field(description="Expiry, seconds since the epoch.")
    iat: int | None = Field(default=None, description="Issued-at, seconds since the epoch.")
    sub: str = Field(description="Subject: the task attempt id or DAG run id the token was minted for.")
    scope: str = Field(default="", max_length=1000,
                       description="Space-separated scopes: `emit`, `ti:self`, `dag:self`.")
    attested: bool = Field(default=False, description="Minted from an attestation of Airflow's api-server: "
                           "it lives no longer than its attempt (plus its callbacks' grace), and once expired it "
                           "is refused as `attempt_ended`.")
    iss: str | None = Field(default=None, description="Issuer: the installation that minted the token.")
    publish: list[AssetRef] | Literal["*"] | None = Field(
        default=None, max_length=10_000,
        description='Publication policy: "*" (any registered asset) or the assets this token may emit; '
        "absent: none.")

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.scope.split())

    def may_publish(self, name: str, uri: str) -> bool:
        """Whether the publication policy allows the asset named `name` with URI `uri`."""
        if self.publish == ANY_ASSET:
            return True
        return self.publish is not None and AssetRef(name=name, uri=uri) in self.publish

    def declared(self) -> list[str]:
        """The declared assets as `name (uri)` strings, for error messages."""
        if self.publish == ANY_ASSET:
            return ["any registered asset"]
        return sorted(f"{a.name} ({a.uri})" for a in self.publish or ())

    def task_instance_id(self) -> uuid.UUID | None:
        """The ti_id of a task token; None for a DAG-run token."""
        if self.task_id is None or self.map_index is None:
            return None
        return task_instance_id(self.dag_id, self.run_id, self.task_id, self.map_index)

    def provenance(self) -> Provenance:
        return Provenance.model_validate(self.model_dump(include=set(Provenance.model_fields)))
