"""Executing: the runner and its executors (local warm or fresh worker processes, Dask)."""
