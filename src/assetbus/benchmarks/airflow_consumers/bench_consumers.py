"""assetbus readiness rule of the benchmark's bridge target (one run per partition)."""

from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity

bench_bridge_target = ConsumerDag(dag_id="bench_bridge_target",
                                  schedule=AssetWait("bench_airflow.orders", mapping=Identity()))
