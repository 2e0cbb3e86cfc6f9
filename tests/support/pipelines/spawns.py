"""A pipeline that starts processes every way lab code does and leaves them running: a forked
child, a tool started with Popen (detached: a session of its own, as a daemon would be), and a
double-forked daemon that calls setsid() itself. Their pids go into the file KIT_TEST_PIDS
names, then (KIT_TEST_HANG) the run itself sleeps, so that kit can be killed while it runs."""

import os
import subprocess
import time

import numpy as np

SEEDS = ("init",)


def _daemon():
    """fork, setsid, fork again: the classic escape from a process group and a parent."""
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            time.sleep(300)
        os._exit(0)
    os.close(w)
    pid = int(os.read(r, 32))
    os.close(r)
    return pid


def run(seeds):
    pids = []
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    pids.append(child)
    pids.append(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
    pids.append(_daemon())
    with open(os.environ["KIT_TEST_PIDS"], "a") as f:
        f.write(" ".join(map(str, pids)) + "\n")
    if os.environ.get("KIT_TEST_HANG"):
        time.sleep(300)
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
