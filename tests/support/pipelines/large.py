"""A pipeline whose one output is 80 KB: past the bound a test sets (KIT_MAX_OUTPUT_BYTES)."""

import numpy as np

SEEDS = ("init",)


def run(seeds):
    return {"x": np.random.default_rng(seeds["init"]).random(10_000)}
