"""A consumer DAG for the bridge's failure tests (tests only), declared once: its readiness rule is its own
`PartitionedAssetTimetable` (one run per partition of `replica_feed`), and the tag `assetbus` lets the bridge
start its runs. The tests keep it paused, so its runs are created by the bridge but never executed: only
run creation is under test."""

from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, task

replica_feed = Asset("airflow_demo.replica_feed", uri="s3://example/replica_feed")

with DAG(dag_id="orders_replica", schedule=PartitionedAssetTimetable(assets=replica_feed), catchup=False,
         tags=["assetbus"]):

    @task(inlets=[replica_feed])
    def replicate() -> None:
        print("replicating")

    replicate()
