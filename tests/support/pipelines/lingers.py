"""Lab code that leaves a non-daemon thread and an atexit handler behind it (a logger's flush
thread, a progress bar's): a finished run must be stored, not waited on until its deadline."""

import atexit
import threading
import time

import numpy as np

SEEDS = ("init",)


def run(seeds):
    threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: Python waits
    atexit.register(time.sleep, 600)
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
