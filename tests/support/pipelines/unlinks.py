"""A pipeline that deletes its store's index, or puts a copy in its place, while it runs
(issue 54.6). Its environment names no path into KIT_HOME (kit drops every such variable), so
it is told where the store is in hex, as a lab's code could know the place (the platform's
default KIT_HOME, a path it was given)."""

import os
import shutil

import numpy as np

SEEDS = ("init",)


def run(seeds):
    home = bytes.fromhex(os.environ["KIT_TEST_HOME_HEX"]).decode()
    index = os.path.join(home, "store.sqlite")
    if os.environ.get("KIT_TEST_HOW") == "replace":  # a copy, as a restored backup would be
        shutil.copyfile(index, index + ".copy")
        os.replace(index + ".copy", index)
    elif os.path.exists(index):
        os.unlink(index)
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
