"""A pipeline whose one output holds 2 MiB: past the stage cap a test sets
(KIT_BUNDLE_MAX_ARRAY_MIB=1), which import, export and a run share."""

import numpy as np

SEEDS = ("init",)


def run(seeds):
    return {"x": np.random.default_rng(seeds["init"]).random(2 * 1024 ** 2 // 8)}
