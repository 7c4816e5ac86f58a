"""Benchmark DAG (Airflow): its runs are created by the assetbus bridge, one per ready partition.

Its only task is an `EmptyOperator` without inlets or outlets, which Airflow's scheduler marks successful
without an executor: a run costs Airflow its scheduling, as on the native paths, and no task process.
"""

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, PartitionedAtRuntime

with DAG(dag_id="bench_bridge_target", schedule=PartitionedAtRuntime(), catchup=False):
    EmptyOperator(task_id="noop")
