"""Execute RunSpecs: one worker subprocess per run, in the run's stack, results into the store."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from .data.dataset import Dataset, dataset_path
from .errors import KitError
from .paths import subdir
from .spec import RunSpec
from .stacks import get_stack
from .store import Store

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
_WORKER_SRC = Path(__file__).parent / "worker"


def worker_root() -> Path:
    """A directory holding only ``kit/worker``: the PYTHONPATH of every worker process.

    Foreign interpreters then see no other kit module and none of kit's dependencies.
    """
    files = sorted(_WORKER_SRC.glob("*.py"))
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()
    root = subdir("worker") / digest[:16]
    if not root.exists():
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".tmp-"))
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
    env.pop("PYTHONHOME", None)
    return env


def execute(spec: RunSpec, dataset: Dataset, store: Store) -> str:
    """Run one spec in its stack's interpreter and store the result; returns the run id."""
    if store.has_run(spec.run_id):
        return spec.run_id
    stack = get_stack(spec.stack)
    if stack.identity != spec.stack_id:
        raise KitError(f"stack {spec.stack!r} changed since this run was planned; plan again")
    with tempfile.TemporaryDirectory(dir=subdir("tmp")) as tmp:
        tmp = Path(tmp)
        (tmp / "spec.json").write_text(spec.worker_json())
        out = tmp / "out"
        out.mkdir()
        extra = []
        if spec.kind in ("torch", "perturb"):  # the fixed embedding it trains on, from the store
            np.save(tmp / "input.npy", store.array(spec.input, "svd_rand"))
            extra = ["--input", str(tmp / "input.npy")]
        proc = subprocess.run(
            [*stack.command, "-m", "kit.worker", "--spec", str(tmp / "spec.json"),
             "--dataset", str(dataset_path(dataset)), "--out", str(out), *extra],
            cwd=tmp, env=worker_env(spec), capture_output=True, text=True)
        manifest_file = out / "manifest.json"
        if proc.returncode != 0 or not manifest_file.exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise KitError(f"worker failed in stack {spec.stack!r} (exit {proc.returncode}): {last}")
        manifest = json.loads(manifest_file.read_text())
        manifest["spec"] = json.loads(spec.to_json())
        return store.put_run(spec, out, manifest)


def run_all(specs, dataset: Dataset, store: Store, jobs: int = 1, on_done=None,
            should_stop=None) -> list:
    """Run every spec not yet stored (each once, however many pairs share it); resumable.

    ``on_done(spec)`` is called after each finished run, for progress displays;
    ``should_stop()`` is asked before each run starts (a cancel keeps what finished).
    """
    unique = list({s.run_id: s for s in specs}.values())
    todo = [s for s in unique if not store.has_run(s.run_id)]
    store.note_dataset(dataset.summary())
    stop = should_stop or (lambda: False)

    def one(s):
        if stop():
            return None
        execute(s, dataset, store)
        return s

    if jobs <= 1:
        for s in todo:
            if one(s) and on_done:
                on_done(s)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(one, s) for s in todo]
            for fut in as_completed(futures):
                s = fut.result()
                if s and on_done:
                    on_done(s)
    return [s.run_id for s in unique if store.has_run(s.run_id)]
