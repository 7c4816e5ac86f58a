"""assetbus readiness rules for the Airflow consumer DAGs in ./dags: `assetbus dags sync examples/airflow/consumers.py`.

Each ConsumerDag has the dag_id of the Airflow DAG the bridge starts; `assetbus airflow sync`
registers the assets they wait for.
"""

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, HourlyToDaily, Identity

orders_by_partition = ConsumerDag(
    dag_id="orders_by_partition",
    schedule=AssetWait("airflow_demo.orders", mapping=Identity()),
    description="one Airflow run per ready orders partition",
)

daily_clicks_report = ConsumerDag(
    dag_id="daily_clicks_report",
    schedule=AssetWait("airflow_demo.hourly_clicks", mapping=HourlyToDaily("UTC")),
    description="one Airflow run per UTC day, once its 24 hours arrived",
)
