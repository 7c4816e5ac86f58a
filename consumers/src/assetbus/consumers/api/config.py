"""What the execution API needs to run: one settings model (`ASSETBUS_API_*`, `.env`, or keywords), built once at
the edge (`assetbus run api`, tests) and passed in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from assetbus.consumers.airflow.account import AirflowAccount
from assetbus.consumers.settings import VerificationKeys, service_settings_config

if TYPE_CHECKING:
    from assetbus.producers.kafka.topics import TopicSpec


class ApiConfig(VerificationKeys):
    """The API's settings; connection fields are given by the edge, the rest have defaults."""

    model_config = service_settings_config("ASSETBUS_API_")

    host: str = Field(default="127.0.0.1", description="Address `assetbus run api` binds.")
    port: int = Field(default=8321, ge=0, le=65535, description="Port `assetbus run api` listens on.")
    receipt_timeout_s: float = Field(default=10.0, gt=0, description="How long the HTTP emit waits for the "
                                     "persister's receipt before answering 504.")
    db_pool_size: int = Field(default=8, ge=1, description="Database connections kept by each API worker.")
    workers: int = Field(default=1, ge=1, le=64, description="Worker processes sharing the listening socket, each "
                         "with its own event loop, database pool and Kafka producer (about one per core).")
    backlog: int = Field(default=2048, ge=1, description="Connections the listening socket queues before accept.")
    loop: Literal["uvloop", "asyncio"] = Field(default="uvloop", description="Event loop of the HTTP server.")
    http: Literal["httptools", "h11"] = Field(default="httptools", description="HTTP/1.1 parser of the server.")
    fast_path: bool = Field(default=True, description="Answer the task state key routes (GET, PUT, DELETE) "
                            "and the HTTP emit without FastAPI's per-request dependency resolution, with the same "
                            "responses (`api/fast_path.py`); false: every request goes through FastAPI.")
    access_log: bool = Field(default=False, description="One log line per request (costs CPU on every request).")
    instance_id: str | None = Field(default=None, description="Key of this process's receipts on the reply topic; "
                                    "a random one per start by default.")
    pipeline_gauges_interval_s: float | None = Field(default=15.0, gt=0, description="How often the consumer-group "
                                                     "lag and dead-letter gauges of /metrics are refreshed from the "
                                                     "broker; unset: never.")
    airflow: AirflowAccount | None = Field(default=None, repr=False, description="Airflow's API server and the "
                                           "service account that checks attempts before `/airflow/tokens` "
                                           "mints a token (given by the edge from ASSETBUS_AIRFLOW_*); None turns "
                                           "that route off (404 airflow_not_configured).")
    state_cleanup_interval_s: float | None = Field(default=3600.0, gt=0, description="How often the API deletes "
                                                   "task state whose `expires_at` has passed (Airflow's "
                                                   "`state-store clean`); unset: never (run `assetbus state "
                                                   "cleanup` instead).")
    state_cleanup_batch_size: int = Field(default=0, ge=0, description="Rows the cleanup deletes per transaction "
                                          "(Airflow's `state_cleanup_batch_size`); 0: all in one.")
    state_clear_on_success: bool = Field(default=False, description="Airflow's `[state_store] clear_on_success`: "
                                         "`POST /execution/store/ti/{task_instance_id}/on-success` clears the "
                                         "task instance's state. Off by default, as in Airflow, so that what a "
                                         "task wrote stays visible after it succeeded.")
    airflow_token_ttl_s: int = Field(default=900, ge=60, description="Lifetime of the tokens minted for Airflow "
                                     "attempts (the SDK asks again before they expire).")
    airflow_identity: Literal["attested", "credential"] = Field(
        default="attested", description="How `/airflow/tokens` proves a task attempt (docs/security.md): "
        "`attested`, only by an attestation that `AssetbusStoreBackend` signed in Airflow's api-server for the "
        "task whose Airflow JWT called it (a worker credential then gets DAG-run tokens only: 403 "
        "attestation_required for task tokens); `credential`, by the worker credential and Airflow's attempt "
        "check, for deployments that cannot run the backend.")
    airflow_callback_grace_s: int = Field(default=120, ge=1, description="Attested mode: how long after its "
                                          "attempt ended a task's callbacks may still get a token, and how long "
                                          "that token lives at most (its attempt's end plus this grace).")
    airflow_attested_ttl_s: int = Field(default=60, ge=10, description="Attested mode: lifetime of a running "
                                        "attempt's token; the SDK renews it through Airflow's channel before then. "
                                        "No longer than the callbacks' grace, so that no token outlives its attempt "
                                        "by more than the grace.")

    @model_validator(mode="after")
    def _attested_ttl_within_grace(self) -> ApiConfig:
        if self.airflow_attested_ttl_s > self.airflow_callback_grace_s:
            raise ValueError(f"airflow_attested_ttl_s ({self.airflow_attested_ttl_s}) must not exceed "
                             f"airflow_callback_grace_s ({self.airflow_callback_grace_s})")
        return self
    airflow_publish: Literal["declared", "any"] = Field(
        default="declared", description="What the tokens minted for Airflow may publish: `declared`, the outlets "
        "`assetbus airflow sync` registered for the task (for a DAG-run token: the assets any task of the DAG "
        "declares, inlet or outlet); `any`: every registered asset.")

    def required_topics(self) -> list[TopicSpec]:
        """The topics the API needs: the emissions it sends HTTP emits to, the receipts it reads answers from."""
        from assetbus.producers.kafka.topics import core_specs  # aiokafka: not for the CLI's --help

        return core_specs(self.topics, only=[self.topics.emissions, self.topics.receipts])
