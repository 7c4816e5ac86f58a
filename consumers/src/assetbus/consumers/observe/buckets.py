"""Histogram buckets shared by the services' metrics (so dashboards compare like with like)."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: database commits, batches, handlers."""

READINESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
"""Seconds from an upstream event's storage to its readiness signal (published, or handled)."""
