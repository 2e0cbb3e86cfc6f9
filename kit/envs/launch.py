"""How a worker process starts: its folder of worker code, its environment, and a fingerprint.

The worker runs inside foreign interpreters (Python 3.9-3.14, old numpy): it is started with
only ``kit/worker`` on its PYTHONPATH and the thread variables fixed, and nothing else of kit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.paths import subdir
from ..core.spec import RunSpec

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
_WORKER_SRC = Path(__file__).resolve().parents[1] / "worker"


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


def fingerprint(command: tuple, threads: int = 1, what: str = "--fingerprint") -> dict:
    """Run the worker's --fingerprint (or --probe-threads) in an interpreter."""
    spec = RunSpec(dataset="", stack="", stack_id="", threads=threads)
    proc = subprocess.run([*command, "-m", "kit.worker", what], env=worker_env(spec),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout)
