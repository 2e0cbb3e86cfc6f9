"""A pipeline that prints a line, then ends its process as crashed lab code does, by the way
KIT_TEST_CRASH names: "exit" (a C library's exit(3)) or "segfault" (a C extension reading
address 0: SIGSEGV) or "killpg" (SIGTERM to its own process group, as a tool's cleanup
does: the tether that leads the group gets it too). kit says the run, the exit code or signal, and
the line it printed last
(its colours stripped)."""

import ctypes
import os
import signal
import sys

SEEDS = ("init",)


def run(seeds):
    seeds["init"]
    print("loading the model", file=sys.stderr)
    print("\x1b[31mthe last words\x1b[0m before the end", file=sys.stderr, flush=True)
    if os.environ["KIT_TEST_CRASH"] == "segfault":
        ctypes.string_at(0)
    if os.environ["KIT_TEST_CRASH"] == "killpg":
        os.killpg(0, signal.SIGTERM)
    os._exit(3)
