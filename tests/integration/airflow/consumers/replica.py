"""assetbus readiness rule of the tests' orders_replica DAG."""

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity

orders_replica = ConsumerDag(dag_id="orders_replica",
                             schedule=AssetWait("airflow_demo.replica_feed", mapping=Identity()))
