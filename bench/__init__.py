"""Benchmarks (run as modules, e.g. `python -m bench.ingest`); never timed assertions in tests."""
