"""What the Airflow forwarder needs to run: one settings model (`ASSETBUS_FORWARDER_*`, `.env`, or keywords)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator
from pydantic_settings import NoDecode

from assetbus.consumers.airflow.config import AirflowServiceSettings
from assetbus.consumers.settings import service_settings_config


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
    backoff_initial_s: float = Field(default=0.5, gt=0, description="First wait while Airflow cannot take an "
                                     "event.")
    backoff_max_s: float = Field(default=30.0, gt=0, description="Longest wait while Airflow cannot take an event.")

    @model_validator(mode="after")
    def _consistent(self) -> ForwarderConfig:
        if self.lease_s <= 3 * self.airflow.timeout_s:
            raise ValueError(f"lease_s ({self.lease_s:g}) must be more than 3 times the Airflow timeout "
                             f"({self.airflow.timeout_s:g} s): a lease must outlast a POST with a token refresh")
        return self
