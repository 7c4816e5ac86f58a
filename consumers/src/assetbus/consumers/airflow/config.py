"""What the Airflow bridge and the forwarder need to run: one settings model each (`ASSETBUS_BRIDGE_*`,
`ASSETBUS_FORWARDER_*`, `.env`, or keywords), built once at the edge (`assetbus run airflow-bridge`, tests) and
passed in, on the base they share."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from assetbus.consumers.airflow.account import AirflowAccount
from assetbus.consumers.scheduler.config import readiness_partitions_field
from assetbus.consumers.settings import (
    BackoffSettings,
    ConsumerGroupSettings,
    ProbeSettings,
    ServiceSettings,
    service_settings_config,
)


class AirflowServiceSettings(ServiceSettings, ConsumerGroupSettings, BackoffSettings, ProbeSettings):
    """The settings of a service that calls Airflow (the bridge, the forwarder)."""

    airflow: AirflowAccount = Field(repr=False, description="Airflow's API server and the account the service "
                                    "calls it as (given by the edge from ASSETBUS_AIRFLOW_URL and "
                                    "ASSETBUS_AIRFLOW_PASSWORD, _TOKEN or _AUTH).")
    backoff_initial_s: float = Field(default=0.5, gt=0, description="First wait while Airflow cannot take a run "
                                     "(the bridge) or an event (the forwarder).")
    backoff_max_s: float = Field(default=30.0, gt=0, description="Longest wait while Airflow cannot take a run or "
                                 "an event.")

    @field_validator("dag_ids", "assets", mode="before", check_fields=False)
    @classmethod
    def _split(cls, value: Any) -> Any:
        """`ASSETBUS_BRIDGE_DAG_IDS="orders daily"`, `ASSETBUS_FORWARDER_ASSETS` (or comma-separated): several."""
        return tuple(value.replace(",", " ").split()) if isinstance(value, str) else value


class BridgeConfig(AirflowServiceSettings):
    """The bridge's settings; connection fields and the Airflow account are given by the edge. Its consumer
    groups (one per DAG's readiness topic) share `group_id`, `<topic prefix>-airflow-bridge` by default."""

    model_config = service_settings_config("ASSETBUS_BRIDGE_")
    service = "airflow-bridge"

    dag_ids: Annotated[tuple[str, ...], NoDecode] = Field(default=(), json_schema_extra={"option": "--dag"},
                                     description="Only these Airflow DAGs (repeatable); each one's readiness rule "
                                     "is the assetbus consumer DAG of the same id. Unset: every DAG Airflow tags "
                                     "`assetbus`, with the rule of its own timetable, found as they appear.")
    airflow_metadata_url: str | None = Field(default=None, repr=False, description="Optional: Airflow's metadata "
                                             "database (sqlite:///... or postgresql://...), read-only, to read the "
                                             "partition mappers from its serialized DAGs instead of the rules the "
                                             "provider's cluster policy registers from Airflow's dag-processor.")
    sync_interval_s: float = Field(default=30.0, ge=0, description="How often Airflow's assets, task "
                                   "registrations and DAG readiness rules are synced (0: only at start-up).")
    max_records: int = Field(default=100, ge=1, description="Readiness signals fetched per batch and DAG.")
    batch_timeout_ms: int = Field(default=500, ge=0, description="How long to wait to fill a batch.")
    readiness_partitions: int = readiness_partitions_field(
        "the bridge creates for a DAG it serves before the scheduler has created it (set it as the scheduler's "
        "ASSETBUS_SCHEDULER_READINESS_PARTITIONS; ASSETBUS_CREATE_TOPICS=false: none)")
    poll_interval_s: float = Field(default=2.0, gt=0, description="How often the outcomes of open Airflow runs "
                                   "are read.")
    concurrency: int = Field(default=1, ge=1, description="Signals of one fetched batch handled at once (Airflow "
                             "requests in flight); keep 1 for an Airflow on SQLite, whose API server serialises "
                             "writes.")
    lease_s: float = Field(default=60.0, gt=0, description="How long the bridge's claim on a run lasts "
                           "unless renewed (three times per lease while it creates the run): a bridge killed meanwhile "
                           "leaves the run to another bridge after at most this long.")

    @model_validator(mode="after")
    def _consistent(self) -> BridgeConfig:
        if any(not dag_id for dag_id in self.dag_ids):
            raise ValueError("a DAG id must not be empty")
        return self


class ForwarderConfig(AirflowServiceSettings):
    """The forwarder's settings; connection fields and the Airflow account are given by the edge."""

    model_config = service_settings_config("ASSETBUS_FORWARDER_")
    service = "airflow-forwarder"

    assets: Annotated[tuple[str, ...], NoDecode] = Field(default=(), json_schema_extra={"option": "--asset"},
                                     description="Forward only the events of these assets (repeatable); none: "
                                     "every asset that Airflow knows.")
    concurrency: int = Field(default=1, ge=1, description="Assets of one fetched batch forwarded at once (one "
                             "asset's events always in order); keep 1 for an Airflow on SQLite.")
    max_records: int = Field(default=200, ge=1, description="Asset events fetched per batch.")
    asset_refresh_s: float = Field(default=30.0, gt=0, description="How long an asset that Airflow does not know "
                                   "is taken as unknown before Airflow is asked again.")
    search_slack_s: float = Field(default=600.0, ge=0, description="When resolving an unconfirmed intent, "
                                  "Airflow's events of the asset are searched from this long before the intent "
                                  "was written (clock skew between assetbus's database and Airflow).")
    lease_s: float = Field(default=60.0, gt=0, description="How long a forwarder's lease on an event it is posting "
                           "lasts: another forwarder (a rebalance) waits that long for a forwarder killed mid-request. "
                           "It must outlast a POST with a token refresh (more than 3 times the Airflow timeout).")

    @model_validator(mode="after")
    def _consistent(self) -> ForwarderConfig:
        if self.lease_s <= 3 * self.airflow.timeout_s:
            raise ValueError(f"lease_s ({self.lease_s:g}) must be more than 3 times the Airflow timeout "
                             f"({self.airflow.timeout_s:g} s): a lease must outlast a POST with a token refresh")
        return self
