"""Worker processes: how one starts (its folder of worker code, its environment, its command
line), which of them run now, and how they end; and a fingerprint taken by one.

The worker runs inside foreign interpreters (Python 3.9-3.14, old numpy): it is started with
only ``kit/worker`` on its PYTHONPATH and the thread variables fixed, and nothing else of kit.
Every worker kit starts is started and ended here, so ``terminate_workers`` reaches them all.
A worker stays in kit's process group (a Ctrl-C, or a kill of the group, reaches it as well)
and watches KIT_PARENT_PID, so it also dies with a kit that was killed alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from ..core.paths import subdir
from ..core.spec import RunSpec

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
_WORKER_SRC = Path(__file__).resolve().parents[1] / "worker"
_live: set = set()          # worker processes running now (killed if kit is interrupted)
_live_lock = threading.Lock()


def worker_root() -> Path:
    """A directory holding only ``kit/worker``: the PYTHONPATH of every worker process.

    Foreign interpreters then see no other kit module and none of kit's dependencies.
    """
    files = sorted(_WORKER_SRC.glob("*.py"))
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()
    root = subdir("worker") / digest[:16]
    if not root.exists():
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".tmp-{os.getpid()}-"))
        (tmp / "kit" / "worker").mkdir(parents=True)
        (tmp / "kit" / "__init__.py").write_text('"""Worker-only copy of kit."""\n')
        for f in files:
            shutil.copy2(f, tmp / "kit" / "worker" / f.name)
        try:
            os.replace(tmp, root)
        except OSError:  # another process won the race with identical content
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def worker_env(spec: RunSpec) -> dict:
    env = dict(os.environ)
    # threads are fixed at process start, for every BLAS/OpenMP runtime at once
    env.update({v: str(spec.threads) for v in THREAD_VARS})
    env.update(dict(spec.env))
    if spec.deterministic:
        env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # deterministic cuBLAS needs it before CUDA starts
    env["PYTHONPATH"] = str(worker_root())
    env["PYTHONNOUSERSITE"] = "1"
    env["KIT_PARENT_PID"] = str(os.getpid())  # the worker exits when this process is gone
    env.pop("PYTHONHOME", None)
    return env


def start(command: tuple, args: list, spec: RunSpec, cwd=None, **pipes) -> subprocess.Popen:
    """Start ``python -m kit.worker ARGS`` in the interpreter ``command``, its environment that
    of ``spec``; it is tracked (``terminate_workers`` kills it) until ``stop``."""
    proc = subprocess.Popen([*command, "-m", "kit.worker", *args], cwd=cwd, env=worker_env(spec),
                            text=True, **pipes)
    with _live_lock:
        _live.add(proc)
    return proc


def stop(proc: subprocess.Popen, grace: float = 0) -> None:
    """End a worker that ``start`` started and stop tracking it: its stdin, if it has one, is
    closed (a serving worker's end of requests); it has ``grace`` seconds to exit, then is killed."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=grace)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    finally:
        with _live_lock:
            _live.discard(proc)


def run(command: tuple, args: list, spec: RunSpec, cwd=None,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run a worker to its end, its output captured; killed if waiting fails (a timeout, an
    interrupt, an error), so none outlives the wait."""
    proc = start(command, args, spec, cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        stop(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def terminate_workers() -> None:
    """Kill every worker this process started that is still running."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


def fingerprint(command: tuple, threads: int = 1, what: str = "--fingerprint") -> dict:
    """Run the worker's --fingerprint (or --probe-threads) in an interpreter."""
    spec = RunSpec(dataset="", stack="", stack_id="", threads=threads)
    proc = run(command, [what], spec, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout)
