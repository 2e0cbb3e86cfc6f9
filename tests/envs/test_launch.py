"""kit.envs.launch: every worker process starts, is tracked and ends in one place.

The "interpreter" here is ``python -c CODE``: the worker's argv (``-m kit.worker ARGS``) then
reaches CODE as ``sys.argv[1:]``, so each test sees exactly what a worker would be given.
"""

import os
import sys
import threading

import pytest
from procs import group_members

from kit.core.spec import RunSpec
from kit.envs import launch

SPEC = RunSpec(
    dataset="", stack="", stack_id="", threads=3, env=(("OPENBLAS_CORETYPE", "Prescott"),)
)


def python(code: str) -> tuple:
    return (sys.executable, "-c", code)


def test_run_gives_the_worker_its_argv_and_environment_and_captures_its_end():
    """What it says on its channel (KIT_CHANNEL) is its stdout; what it prints is not. Its
    parent, which KIT_PARENT_PID names (it exits once that is gone), is its tether, a child of
    kit."""
    code = (
        "import os, sys; ch = os.fdopen(int(os.environ['KIT_CHANNEL']), 'w'); "
        "print(sys.argv[1:], os.environ['OMP_NUM_THREADS'], "
        "os.environ['OPENBLAS_CORETYPE'], os.environ['KIT_PARENT_PID'], os.getppid(), "
        "file=ch); print('printed'); print('oops', file=sys.stderr); sys.exit(3)"
    )
    proc = launch.run(python(code), ["--spec", "s.json"], SPEC)
    assert proc.args[-4:] == ["-m", "kit.worker", "--spec", "s.json"]
    said = proc.stdout.split()
    assert " ".join(said[:6]) == "['-m', 'kit.worker', '--spec', 's.json'] 3 Prescott"
    assert said[6] == said[7] and int(said[6]) != os.getpid()
    assert (proc.returncode, proc.stderr) == (3, "oops\n")


def test_a_worker_runs_in_a_session_of_its_own_and_what_it_forked_ends_with_it():
    """Its tether leads the session and the group; a forked child and a detached one (a session
    of its own) are ended with the run."""
    code = (
        "import os, subprocess, sys, time\n"
        "ch = os.fdopen(int(os.environ['KIT_CHANNEL']), 'w')\n"
        "if os.fork() == 0:\n    time.sleep(300); os._exit(0)\n"
        "d = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "print(os.getppid(), os.getpgid(0), os.getsid(0), d.pid, file=ch)"
    )
    proc = launch.run(python(code), [], SPEC)
    parent, pgid, sid, detached = map(int, proc.stdout.split())
    assert parent == pgid == sid and pgid != os.getpgid(0)
    assert group_members(pgid) == []  # the sleeping child was killed with the run
    assert group_members(detached) == []  # and the detached one, in a group of its own


def test_a_worker_past_its_deadline_is_ended_with_its_group():
    code = "import time\nimport os\nos.fork()\ntime.sleep(300)"
    with pytest.raises(launch.PastDeadline):
        launch.run(python(code), [], SPEC, timeout=1)
    assert not [w for w in launch._live]


def test_an_answer_past_its_bound_is_refused_as_it_is_read():
    code = "import os; os.write(int(os.environ['KIT_CHANNEL']), b'x' * (1024 * 1024))"
    with pytest.raises(launch.TooLong, match="256 KiB"):
        launch.run(python(code), [], SPEC)


def test_a_flood_of_stderr_keeps_its_last_bytes_only():
    code = (
        "import os\nfor _ in range(2000): os.write(2, b'y' * 65536)\n"
        "os.write(2, b'the last line\\n')"
    )
    proc = launch.run(python(code), [], SPEC)
    assert len(proc.stderr) <= launch.TAIL_BYTES and proc.stderr.endswith("the last line\n")


def test_a_live_workers_last_lines_before_it_answered_are_all_taken():
    """A warm worker's log: what it wrote before answering is in the tail taken right after the
    answer, even while other threads of kit hold the interpreter (CI lost a flood's last line:
    the reader had the chunk in hand, not yet kept, when the tail was taken)."""
    code = (
        "import os, sys, time\nch = int(os.environ['KIT_CHANNEL'])\n"
        "for i in range(20):\n"
        "    sys.stdin.readline()\n"
        "    os.write(2, b'y' * (300 * 1024) + b'\\nthe last line %d\\n' % i)\n"
        "    os.write(ch, b'{}\\n')\n"
    )
    busy = threading.Event()

    def spin():  # a thread that wants the GIL all the time, as xdist's and Textual's do
        while not busy.is_set():
            sum(range(1000))

    spinners = [threading.Thread(target=spin, daemon=True) for _ in range(3)]
    for t in spinners:
        t.start()
    w = launch.start(python(code), [], SPEC, requests=True)
    try:
        for i in range(20):
            w.send({})
            assert w.answer(deadline=None) == b"{}\n"
            printed = w.tail(settle=True)
            assert printed.endswith(f"the last line {i}\n") and len(printed) <= launch.TAIL_BYTES
    finally:
        busy.set()
        w.stop()


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
    proc = launch.start(
        python("import sys; sys.stdin.read(); sys.exit(5)"), ["--serve"], SPEC, requests=True
    )
    launch.stop(proc, grace=60)
    assert proc.returncode == 5  # it exited on its own: the end of its requests


def test_stop_kills_a_worker_that_does_not_exit_in_its_grace():
    proc = launch.start(python("import signal; signal.pause()"), [], SPEC, requests=True)
    launch.stop(proc, grace=0)
    assert proc.returncode == -9  # closing its stdin did not end it: it was killed
