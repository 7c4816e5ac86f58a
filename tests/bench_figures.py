"""The figures the benchmarks always print: the keys their `--json` lines must hold."""

SUITE_REQUIRED = ("receipted_per_s", "emit_receipted_per_s", "receipt_p50_ms", "receipt_p99_ms", "readiness_p50_ms",
                  "readiness_p99_ms", "scheduler_events_per_s", "api_get_per_s", "api_get_p99_ms", "api_put_per_s",
                  "http_emit_per_s", "persister_peak_rss_mb", "scheduler_peak_rss_mb", "pg_ceiling_rows_per_s",
                  "persister_share_of_pg_ceiling", "scheduler_share_of_persister", "scheduler_1000_dags_over_1_dag",
                  "subscriber_signals_per_s", "subscriber_cpu_us_per_signal")
"""The keys `bench all --json` always prints (latencies at the first offered rate, 1,000/s by default)."""

AIRFLOW_REQUIRED = ("airflow_event_p50_ms", "airflow_event_p99_ms", "airflow_native_run_p50_ms",
                    "airflow_native_run_p99_ms", "airflow_bridge_run_p50_ms", "airflow_bridge_run_p99_ms",
                    "airflow_rest_run_p50_ms", "airflow_rest_run_p99_ms", "airflow_rest_post_p50_ms",
                    "airflow_bridge_runs_per_s", "airflow_bridge_backlog_s", "airflow_native_runs_per_s",
                    "airflow_native_backlog_s", "airflow_forwarded_events_per_s", "airflow_native_lag_p50_ms",
                    "airflow_native_lag_p99_ms")
"""The figures every `bench airflow` run prints (`--json`, and `assetbus bench all` when it runs this benchmark)."""
