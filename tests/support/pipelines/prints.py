"""A pipeline that prints as lab code does, on fd 1 every way: print, a tool it starts, a C
library's printf and a raw os.write. None of it may reach kit's answers
(tests/scenarios/test_running_a_pipeline_that_misbehaves.py)."""

import ctypes
import os
import subprocess

import numpy as np

SEEDS = ("init",)


def run(seeds):
    print("printed by print")
    subprocess.run(["echo", "printed by echo"], check=True)
    libc = ctypes.CDLL(None)
    libc.printf(b"printed by printf\n")
    libc.fflush(None)
    os.write(1, b"printed by os.write\n")
    os.write(1, b'{"ok": false, "error": "a line that looks like an answer"}\n')
    return {"x": np.random.default_rng(seeds["init"]).random(3)}
