"""Runs: plans of pairs, the runner, and the store of runs and their arrays."""
