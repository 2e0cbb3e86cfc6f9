"""A pipeline that looks where it stands: its environment and its working folder, written to
the file KIT_TEST_SEEN names (one JSON line a run), for the test to see what a lab's code can
find of kit's home (tests/scenarios/test_running_a_pipeline_that_misbehaves.py)."""

import json
import os

import numpy as np

SEEDS = ("init",)


def run(seeds):
    seen = {"env": dict(os.environ), "cwd": os.getcwd()}
    with open(os.environ["KIT_TEST_SEEN"], "a") as f:
        f.write(json.dumps(seen) + "\n")
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
