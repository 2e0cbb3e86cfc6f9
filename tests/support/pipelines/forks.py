"""A pipeline that forks a child which sleeps on after run returns, and says where (the pid and
process group into the file KIT_TEST_PIDS names): kit must end it with the run."""

import os
import time

import numpy as np

SEEDS = ("init",)


def run(seeds):
    pid = os.fork()
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    with open(os.environ["KIT_TEST_PIDS"], "a") as f:
        f.write(f"{pid} {os.getpgid(pid)}\n")
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
