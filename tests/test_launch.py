"""kit.envs.launch: every worker process starts, is tracked and ends in one place.

The "interpreter" here is ``python -c CODE``: the worker's argv (``-m kit.worker ARGS``) then
reaches CODE as ``sys.argv[1:]``, so each test sees exactly what a worker would be given.
"""

import os
import subprocess
import sys
import threading

from kit.core.spec import RunSpec
from kit.envs import launch

SPEC = RunSpec(dataset="", stack="", stack_id="", threads=3, env=(("OPENBLAS_CORETYPE", "Prescott"),))


def python(code: str) -> tuple:
    return (sys.executable, "-c", code)


def test_run_gives_the_worker_its_argv_and_environment_and_captures_its_end():
    code = ("import os, sys; print(sys.argv[1:], os.environ['OMP_NUM_THREADS'], "
            "os.environ['OPENBLAS_CORETYPE'], os.environ['KIT_PARENT_PID']); "
            "print('oops', file=sys.stderr); sys.exit(3)")
    proc = launch.run(python(code), ["--spec", "s.json"], SPEC)
    assert proc.args[-4:] == ["-m", "kit.worker", "--spec", "s.json"]
    assert proc.stdout == f"['-m', 'kit.worker', '--spec', 's.json'] 3 Prescott {os.getpid()}\n"
    assert (proc.returncode, proc.stderr) == (3, "oops\n")


def test_terminate_workers_kills_a_worker_that_run_waits_for(tmp_path):
    """The worker says it runs through a FIFO, then waits for a signal: only a kill ends it."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    code = f"import signal; open({str(fifo)!r}, 'w').write('up'); signal.pause()"
    done = {}

    def wait():
        done["proc"] = launch.run(python(code), [], SPEC)
        try:  # a worker that ended before it said so must not leave the reader below waiting
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert fifo.read_text() == "up"  # blocks until the worker is running
    launch.terminate_workers()
    waiter.join(timeout=60)
    assert not waiter.is_alive() and done["proc"].returncode == -9


def test_stop_ends_a_serving_worker_by_closing_its_stdin():
    proc = launch.start(python("import sys; sys.stdin.read(); sys.exit(5)"), ["--serve"], SPEC,
                        stdin=subprocess.PIPE)
    launch.stop(proc, grace=60)
    assert proc.returncode == 5  # it exited on its own: the end of its requests


def test_stop_kills_a_worker_that_does_not_exit_in_its_grace():
    proc = launch.start(python("import signal; signal.pause()"), [], SPEC, stdin=subprocess.PIPE)
    launch.stop(proc, grace=0)
    assert proc.returncode == -9  # closing its stdin did not end it: it was killed
