"""A lab's pipeline whose truth is a regression target (floats), declared as a truth: verdicts
cannot score it and say so once, not once per run."""

import numpy as np

SEEDS = ("noise",)
KINDS = {"y": "truth", "p": "probabilities"}


def run(seeds):
    rng = np.random.default_rng(seeds["noise"])
    y = np.linspace(0.05, 0.95, 40)
    return {"y": y, "p": np.clip(y + rng.normal(0, 0.01, 40), 0, 1)}
