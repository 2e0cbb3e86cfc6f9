"""Execute RunSpecs through an executor, each once, results into the store; resumable.

The executor says where a run happens (``LocalExecutor``: a worker subprocess here; the
cluster executor in kit.runs.executing.dask_executor: a Dask task on a node); the runner is the same for both
and writes every run it makes (kit.runs.store says who writes what). Temporary folders of dead
processes are swept at the start
of a plan, and a claim per run id in the store keeps two overlapping plans from running the
same spec twice.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from contextlib import closing, nullcontext
from pathlib import Path

import numpy as np

from ...core import scratch
from ...core.callbacks import OnDone
from ...core.errors import KitError
from ...core.paths import subdir
from ...core.processes import alive
from ...core.spec import RunSpec
from ...data.dataset import Dataset, dataset_path
from ...data.pipelines import LabData, pipeline_file
from ...envs.kinds import stack_kind
from ...envs.launch import terminate_workers
from ...worker.pipeline import FEEDS
from ..store import Store
from ..store.hosts import host_id
from ..store.identity import still_here
from .attempt import RunTimedOut, attempt
from .schedule import AUTO, CoreBudget, at_once, largest_first
from .warm import WarmPool


class RunFailed(KitError):
    """One run an executor could not make although it tried: the plan goes on without it."""


DEADLINE_FLOOR = 600  # seconds: the least a run is given when past runs say less
DEADLINE_UNMEASURED = 7_200  # seconds a run is given when the store has none of its subject
DEADLINE_TIMES = 10  # a run is given ten times the slowest past run of its subject


def run_deadline(asked: float | None, history: list) -> tuple:
    """(seconds each run may take, why): ``asked`` (--timeout), else ten times the slowest
    past run of the subject in ``history`` (its stored runs), at least DEADLINE_FLOOR, else
    DEADLINE_UNMEASURED: generous, as a stuck run is the exception and a slow one is not."""
    if asked:
        return float(asked), "--timeout"
    walls = [r.manifest.get("wall_s") or 0.0 for r in history]
    if walls:
        return (
            max(DEADLINE_FLOOR, DEADLINE_TIMES * max(walls)),
            f"{DEADLINE_TIMES}x its slowest stored run, at least {DEADLINE_FLOOR} s; "
            f"--timeout SECONDS sets it",
        )
    return float(DEADLINE_UNMEASURED), "none of its runs is stored yet; --timeout SECONDS sets it"


class PlanIncomplete(KitError):
    """A plan that ended with some of its runs failed (the others are stored)."""

    def __init__(self, failed: list, tried: int | None = None):
        self.failed = failed  # [(spec, why)]
        whys = "; ".join(why for _, why in failed[:3]) + ("; ..." if len(failed) > 3 else "")
        others = (
            "none of them was stored" if tried == len(failed) else "the others are stored"
        )  # every run it tried failed: nothing to point at
        super().__init__(
            f"{len(failed)} run(s) of this plan failed ({whys}); {others}: run the "
            "same command to try the failed ones again"
        )


class Executor:
    """Where runs happen. ``run`` fills ``out`` (an empty folder here) with one run's arrays
    and returns its manifest (None: ``stop()`` said stop first, nothing to store); ``slots``
    says how many runs may go at once. An executor raises RunFailed for a run it gave up on
    (the plan goes on), any other error ends the plan. ``held``: blob keys of arrays the store
    holds verified; a remote executor may leave an array equal to one of them out of ``out``
    (the store indexes its own copy, once it verifies)."""

    name = ""
    remote = False  # True: its runs are made elsewhere; a run that fails the store's checks
    #                 fails alone (RunFailed), as a node's fault, and the plan goes on

    # seconds a run may take as asked (--timeout); None: run_deadline's own
    timeout: float | None = None

    def slots(self, specs, jobs: int) -> int:
        return jobs

    def plan_deadline(self, seconds: float) -> None:
        """The deadline of each run of the plan about to start (run_deadline's)."""

    def unfit(self, spec: RunSpec) -> str | None:
        """Why this executor has nowhere to make ``spec`` (a plan skips it), or None."""
        return None

    def refit(self, pair):
        """``pair`` moved to where this executor can make both its runs (a cluster's node
        class that offers their cores), or None: nowhere else (a plan skips it)."""
        return None

    def check(self, spec: RunSpec) -> None:
        """Refuse, before claiming, a run this executor cannot make as planned."""

    def run(
        self,
        spec: RunSpec,
        dataset: Dataset | LabData,
        input_npy: bytes | None,
        out: Path,
        stop=lambda: False,
        held=frozenset(),
    ) -> dict | None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalExecutor(Executor):
    """A worker subprocess of kit per run, in the run's stack on this machine (the default).
    Runs share the cores: one of t threads starts only when t cores are free."""

    name = "local"

    def __init__(self, fresh: bool = False, timeout: float | None = None):
        self.cores = CoreBudget()
        # warm workers unless asked for a fresh process per run (--fresh)
        self.warm = None if fresh else WarmPool()
        self.timeout = timeout
        self.deadline = timeout

    def plan_deadline(self, seconds):
        self.deadline = seconds

    def close(self):
        if self.warm is not None:
            self.warm.close()

    def slots(self, specs, jobs):
        return at_once(specs, jobs)

    def check(self, spec):
        if spec.host != host_id():
            raise KitError(
                f"run {spec.run_id[:12]} is planned for {spec.host!r}, not this machine: "
                "run it with --cluster (docs/cluster.md)"
            )
        if stack_kind(spec.stack).runnable().identity != spec.stack_id:
            raise KitError(f"stack {spec.stack!r} changed since this run was planned; plan again")

    def run(self, spec, dataset, input_npy, out, stop=lambda: False, held=frozenset()):
        stack = stack_kind(spec.stack).runnable()  # its arrays are here: every one is moved
        # the name says whose and which run it is: swept when its process is gone, and visible in ps
        # outside KIT_HOME (kit.core.scratch); a warm worker stands in its pool's folder, and
        # a container worker sees only that one: the run's is made there
        where = (
            self.warm.folder(stack)
            if self.warm is not None and spec.process != "fresh"
            else scratch.root()
        )
        with (
            self.cores.hold(spec.threads),
            tempfile.TemporaryDirectory(
                dir=where, prefix=f"run-{os.getpid()}-{spec.run_id[:12]}-"
            ) as tmp,
        ):
            if stop():  # the plan stopped while this run waited for its cores: none starts
                return None
            # a lab pipeline reads its own data: the worker is given its file instead
            data = pipeline_file(spec.pipeline) if spec.pipeline else dataset_path(dataset)
            try:
                manifest = attempt(
                    spec, stack, data, Path(tmp), input_npy, self.warm, self.deadline
                )
            except RunTimedOut as e:  # ended, nothing kept: the plan goes on without it
                raise RunFailed(str(e)) from None
            for f in (Path(tmp) / "out").iterdir():
                shutil.move(str(f), out / f.name)
        return manifest


def sweep_tmp() -> int:
    """Remove temporary folders left by processes that no longer run (a kill -9); returns how many:
    runs' folders (kit.core.scratch), and in KIT_HOME/tmp those of container builds and probes
    (and runs' of an older kit)."""
    removed = scratch.sweep_runs()
    for d in subdir("tmp").iterdir():
        parts = d.name.lstrip(".").split("-")
        # run, got: a run's folders; base, image, store, ctr: a container build's or probe's
        if (
            len(parts) >= 3
            and parts[0] in ("run", "tmp", "got", "base", "image", "store", "ctr")
            and parts[1].isdigit()
            and int(parts[1]) != os.getpid()
            and not alive(int(parts[1]))
        ):
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


def _input(spec: RunSpec, store: Store) -> bytes | None:
    """The stored embedding a torch or perturb run trains on, as .npy bytes; the stored arrays
    a feed run starts from, as .npz bytes (one member per array, no pickles)."""
    buf = io.BytesIO()
    if spec.kind == "feed":
        used = "svd_arpack" if spec.embedding == "arpack" else "svd_rand"
        np.savez(
            buf,
            allow_pickle=False,  # as the worker reads it
            **{
                name: store.array(spec.input, used if name == "embedding" else name)
                for name in FEEDS[spec.feed]
            },
        )
        return buf.getvalue()
    if spec.kind not in ("torch", "perturb"):
        return None
    np.save(buf, store.array(spec.input, "svd_rand"))
    return buf.getvalue()


def execute(
    spec: RunSpec,
    dataset: Dataset | LabData,
    store: Store,
    should_stop=lambda: False,
    executor: Executor | None = None,
    gate=None,
) -> str:
    """Make one run where ``executor`` says (here by default) and store it; returns its id.

    ``gate`` (a semaphore) is held while the run runs, not while it is stored: a plan's next run
    starts as soon as this one's worker is done.
    """
    if store.has_run(spec.run_id):
        return spec.run_id
    if executor is None:  # one made here is closed here: its warm workers end, their folder goes
        with closing(LocalExecutor()) as own:
            return execute(spec, dataset, store, should_stop, own, gate)
    executor.check(spec)
    if not _wait_for_claim(store, spec.run_id, should_stop):
        return spec.run_id
    try:
        with tempfile.TemporaryDirectory(
            dir=subdir("tmp"), prefix=f"got-{os.getpid()}-{spec.run_id[:12]}-"
        ) as tmp:
            with gate or nullcontext():
                if should_stop():  # stopped while it waited for its turn
                    return spec.run_id
                # a run made elsewhere need not send back what the store holds now (a seed
                # plan's k-mers ...): asked as it starts, after the runs before it were stored
                held = store.held_blobs(spec.dataset) if executor.remote else frozenset()
                manifest = executor.run(
                    spec, dataset, _input(spec, store), Path(tmp), should_stop, held=held
                )
            if manifest is None:
                return spec.run_id
            manifest["spec"] = json.loads(spec.to_json())
            # verifies every array's sha256, and returns only once the run is indexed whole
            try:
                return store.put_run(spec, Path(tmp), manifest, held=held)
            except KitError as e:
                if executor.remote:
                    raise RunFailed(f"run {spec.run_id[:12]}: {e}") from None
                raise
    finally:
        store.release(spec.run_id)


def _end_runs(futures: list) -> None:
    """End every worker of a halted plan until its threads are done: a thread past its last
    look at ``stop`` may start one more worker, which is ended as it starts, so the plan ends
    within a moment of the signal, not after a run."""
    terminate_workers()
    # done(), not wait()'s own test: a future cancelled in the queue is never "done" to wait()
    while any(not f.done() for f in futures):
        wait(futures, timeout=0.1)
        terminate_workers()


def run_all(
    specs,
    dataset: Dataset | LabData,
    store: Store,
    jobs=AUTO,
    on_done: OnDone | None = None,
    should_stop=None,
    executor: Executor | None = None,
) -> list:
    """Run every spec not yet stored (each once, however many pairs share it), the largest
    (threads x expected time) first; resumable. ``dataset``: a Dataset, or the LabData of a lab
    pipeline (kit.data.pipelines) whose runs these are. ``jobs``: runs at once, or "auto" (as many as
    the cores hold).

    ``on_done(spec)`` is called after each finished run, for progress displays;
    ``should_stop()`` is asked before each run starts (a cancel keeps what finished). Runs the
    executor gave up on (RunFailed) do not stop the others: PlanIncomplete names them at the end.
    """
    own = executor is None  # an executor made here is closed here (its warm workers end)
    executor = executor or LocalExecutor()
    unique = list({s.run_id: s for s in specs}.values())
    history = store.runs(dataset.sha256)
    todo = largest_first([s for s in unique if not store.has_run(s.run_id)], history)
    executor.plan_deadline(run_deadline(executor.timeout, history)[0])
    store.note_dataset(dataset.summary())
    halted: list = []  # set when the plan is interrupted: queued runs must not start
    stop = lambda: bool(halted) or bool(should_stop and should_stop())  # noqa: E731
    sweep_tmp()

    slots = min(executor.slots(todo, jobs), len(todo)) if todo else 1
    gate = threading.BoundedSemaphore(slots)

    failed = []

    def one(s):
        if stop():
            return None
        try:
            execute(s, dataset, store, stop, executor, gate)
        except RunFailed as e:
            failed.append((s, str(e)))
            return None
        return s if store.has_run(s.run_id) else None  # a stopped plan's unmade run is not done

    # one thread more than runs at once: while one stores its run, another's run starts
    pool = ThreadPoolExecutor(max_workers=slots + 1) if len(todo) > 1 else None
    futures = []
    try:
        if pool is None:
            for s in todo:
                if one(s) and on_done:
                    on_done(s)
        else:
            futures = [pool.submit(one, s) for s in todo]
            for fut in as_completed(futures):
                s = fut.result()
                if s and on_done:
                    on_done(s)
    except BaseException:
        halted.append(True)  # an interrupt or an error: no run starts, no worker outlives it
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        _end_runs(futures)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if own:
            executor.close()
    if failed:
        raise PlanIncomplete(failed, len(todo))
    if not stop():  # a plan that lost a run never ends as if it were whole
        still_here(store)  # what this process reads back is the store at its path
        lost = [
            s.run_id[:12]
            for s in todo
            if not (store.has_run(s.run_id) and store.has_arrays(s.run_id))
        ]
        if lost:
            raise KitError(
                f"{len(lost)} run(s) of this plan are not in the store although they "
                f"were made ({', '.join(lost[:5])}): something removed them meanwhile; "
                "run the same command again to make them"
            )
    return [s.run_id for s in unique if store.has_run(s.run_id)]
