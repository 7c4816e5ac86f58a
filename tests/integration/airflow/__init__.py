"""Tests against real Apache Airflow 3 processes (a package, so that its Airflow stack is torn down when they end)."""
