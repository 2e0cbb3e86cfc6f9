"""A pipeline that deletes its store's index, or puts a copy in its place, while it runs
(issue 54.6); it finds the store as a lab's code could, from KIT_HOME."""

import os
import shutil

import numpy as np

SEEDS = ("init",)


def run(seeds):
    home = os.environ.get("KIT_HOME") or os.environ["KIT_TEST_HOME"]
    index = os.path.join(home, "store.sqlite")
    if os.environ.get("KIT_TEST_HOW") == "replace":  # a copy, as a restored backup would be
        shutil.copyfile(index, index + ".copy")
        os.replace(index + ".copy", index)
    elif os.path.exists(index):
        os.unlink(index)
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
