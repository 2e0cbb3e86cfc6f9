"""A pipeline that writes by relative paths, as a script run from its folder does: a file and
folders in the current directory. They go with the run."""

import os

import numpy as np

SEEDS = ("init",)


def run(seeds):
    with open("scratch.txt", "w") as f:
        f.write("left behind?\n")
    os.makedirs("cache/deep", exist_ok=True)
    with open(os.path.join("cache", "deep", "x.bin"), "wb") as f:
        f.write(b"\0" * 1024)
    with open(os.environ["KIT_TEST_CWD"], "w") as f:  # where it ran, for the test to look
        f.write(os.getcwd())
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
