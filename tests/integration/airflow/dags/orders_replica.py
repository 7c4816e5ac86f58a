"""A consumer DAG for the bridge's failure tests (tests only); they keep it paused, so its runs are created
by the bridge but never executed: only run creation is under test."""

from airflow.sdk import DAG, Asset, PartitionedAtRuntime, task

replica_feed = Asset("airflow_demo.replica_feed", uri="s3://example/replica_feed")

with DAG(dag_id="orders_replica", schedule=PartitionedAtRuntime(), catchup=False):

    @task(inlets=[replica_feed])
    def replicate() -> None:
        print("replicating")

    replicate()
