"""The consumer DAGs of `assetbus demo` (synced with `assetbus dags sync src/assetbus/demo/dags.py`).

`demo.orders` is emitted by the ingestion task once per committed batch; each batch is one hourly
file, so its events carry `partition_key="batch-41"` and `partition_date=<the hour>`.
"""

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, HourlyToDaily, Identity, ToUnpartitioned

orders_per_batch = ConsumerDag(
    dag_id="demo.orders_per_batch",
    schedule=AssetWait("demo.orders", mapping=Identity()),
    coalesce=False,
    description="Process every batch as soon as it is committed (one run per batch).",
)

orders_daily = ConsumerDag(
    dag_id="demo.orders_daily",
    schedule=AssetWait("demo.orders", mapping=HourlyToDaily("Europe/Amsterdam")),
    description="Daily report: runs once all hours of the local day have arrived (23, 24 or 25).",
)

incident_triage = ConsumerDag(
    dag_id="demo.incident_triage",
    schedule=AssetWait("demo.incidents", mapping=ToUnpartitioned()),
    description="Open a ticket when a pipeline's failure callback reports an incident.",
)
