"""Benchmarks behind `assetbus bench ...`: real processes, real broker and database, figures with conditions."""
