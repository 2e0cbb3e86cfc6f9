"""Execute RunSpecs: one worker subprocess per run, in the run's stack, results into the store.

Workers die with kit (the worker watches its parent; kit kills its workers when interrupted or
terminated), temporary folders of dead processes are swept at the start of a plan, and a claim
per run id in the store keeps two overlapping plans from running the same spec twice.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from ..data.dataset import Dataset, dataset_path
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.spec import RunSpec
from ..envs.kinds import get_stack
from ..envs.launch import worker_env
from .store import Store

_live: set = set()          # worker processes running now (killed if kit is interrupted)
_live_lock = threading.Lock()


def terminate_workers() -> None:
    """Kill every worker this process started that is still running."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


def _worker(argv, cwd, env) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    with _live_lock:
        _live.add(proc)
    try:
        out, err = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        with _live_lock:
            _live.discard(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def sweep_tmp() -> int:
    """Remove temporary folders left by processes that no longer run (a kill -9); returns how many."""
    from ..core.processes import alive

    removed = 0
    for root in (subdir("tmp"), subdir("worker")):
        for d in root.iterdir():
            parts = d.name.lstrip(".").split("-")
            if len(parts) >= 3 and parts[0] in ("run", "tmp") and parts[1].isdigit() \
                    and int(parts[1]) != os.getpid() and not alive(int(parts[1])):
                shutil.rmtree(d, ignore_errors=True)
                removed += 1
    return removed


def _wait_for_claim(store: Store, run_id: str, should_stop) -> bool:
    """Claim a run, or wait while another live process runs it. False: it ran meanwhile."""
    while not store.claim(run_id):
        if store.has_run(run_id) or should_stop():
            return False
        time.sleep(0.5)
    return not store.has_run(run_id)


def execute(spec: RunSpec, dataset: Dataset, store: Store, should_stop=lambda: False) -> str:
    """Run one spec in its stack's interpreter and store the result; returns the run id."""
    if store.has_run(spec.run_id):
        return spec.run_id
    stack = get_stack(spec.stack)
    if stack.identity != spec.stack_id:
        raise KitError(f"stack {spec.stack!r} changed since this run was planned; plan again")
    if not _wait_for_claim(store, spec.run_id, should_stop):
        return spec.run_id
    try:
        return _execute(spec, dataset, store, stack)
    finally:
        store.release(spec.run_id)


def _execute(spec, dataset, store, stack) -> str:
    # the name says whose and which run it is: swept when its process is gone, and visible in ps
    with tempfile.TemporaryDirectory(dir=subdir("tmp"),
                                     prefix=f"run-{os.getpid()}-{spec.run_id[:12]}-") as tmp:
        tmp = Path(tmp)
        (tmp / "spec.json").write_text(spec.worker_json())
        out = tmp / "out"
        out.mkdir()
        extra = []
        if spec.kind in ("torch", "perturb"):  # the fixed embedding it trains on, from the store
            np.save(tmp / "input.npy", store.array(spec.input, "svd_rand"))
            extra = ["--input", str(tmp / "input.npy")]
        proc = _worker(
            [*stack.command, "-m", "kit.worker", "--spec", str(tmp / "spec.json"),
             "--dataset", str(dataset_path(dataset)), "--out", str(out), *extra],
            cwd=tmp, env=worker_env(spec))
        manifest_file = out / "manifest.json"
        if proc.returncode != 0 or not manifest_file.exists():
            raise KitError(_failure(spec, proc))
        manifest = json.loads(manifest_file.read_text())
        manifest["spec"] = json.loads(spec.to_json())
        return store.put_run(spec, out, manifest)


def _failure(spec: RunSpec, proc) -> str:
    """One line: what failed where, and the fix when the stack itself is broken."""
    lines = proc.stderr.strip().splitlines() or ["no output"]
    last = lines[-1]
    if proc.returncode < 0:
        return f"worker in stack {spec.stack!r} was killed by signal {-proc.returncode}"
    if any(x in proc.stderr for x in ("ImportError", "ModuleNotFoundError", "cannot open shared")):
        return (f"stack {spec.stack!r} cannot import its libraries ({last}); "
                f"`kit stacks build {spec.stack}` repairs a damaged stack")
    return f"worker failed in stack {spec.stack!r} (exit {proc.returncode}): {last}"


def run_all(specs, dataset: Dataset, store: Store, jobs: int = 1, on_done=None,
            should_stop=None) -> list:
    """Run every spec not yet stored (each once, however many pairs share it); resumable.

    ``on_done(spec)`` is called after each finished run, for progress displays;
    ``should_stop()`` is asked before each run starts (a cancel keeps what finished).
    """
    unique = list({s.run_id: s for s in specs}.values())
    todo = [s for s in unique if not store.has_run(s.run_id)]
    store.note_dataset(dataset.summary())
    halted = []  # set when the plan is interrupted: queued runs must not start
    stop = lambda: bool(halted) or bool(should_stop and should_stop())  # noqa: E731
    sweep_tmp()

    def one(s):
        if stop():
            return None
        execute(s, dataset, store, stop)
        return s

    pool = ThreadPoolExecutor(max_workers=jobs) if jobs > 1 else None
    try:
        if pool is None:
            for s in todo:
                if one(s) and on_done:
                    on_done(s)
        else:
            for fut in as_completed([pool.submit(one, s) for s in todo]):
                s = fut.result()
                if s and on_done:
                    on_done(s)
    except BaseException:
        halted.append(True)
        terminate_workers()  # an interrupt or an error: no worker outlives the plan
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return [s.run_id for s in unique if store.has_run(s.run_id)]
