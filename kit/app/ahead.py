"""Analysis ahead of the budget: each run's verdicts and each pair's comparison, made in the
background as soon as their runs are stored, while the plan's later runs still run."""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from typing import cast

from threadpoolctl import threadpool_limits

from ..analysis.compare import compare_runs
from ..analysis.verdicts import has_verdicts, run_verdicts
from ..runs.store import Store

KEPT_BYTES = 128 * 2**20  # arrays the analysis keeps between runs: a reference run's, and more


class _Kept:
    """The store as the analysis ahead reads it: each array read (and verified) by the store
    once, then kept, read-only, by its blob key while later runs need it: a seed plan compares
    every run with one reference run, whose arrays were read again for each pair, and a run's
    verdicts and comparison read the same arrays. A blob key names its bytes, dtype and shape,
    so a kept array is the recorded one for every stage that names it. At most ``limit`` bytes,
    the least recently read let go first."""

    def __init__(self, store: Store, limit: int = KEPT_BYTES):
        self._store, self._limit = store, limit
        self._arrays: OrderedDict = OrderedDict()
        self._bytes = 0
        self._blobs: dict = {}  # {run id: {stage: blob key}}: a stored run's rows stay as written

    def __getattr__(self, name):  # everything else is the store's own
        return getattr(self._store, name)

    def array(self, run_id: str, stage: str):
        if run_id not in self._blobs:
            if len(self._blobs) >= 1024:  # a plan's recent runs, not all of them
                self._blobs.clear()
            self._blobs[run_id] = self._store.stage_blobs(run_id)
        blob = self._blobs[run_id].get(stage)
        a = self._arrays.get(blob)
        if a is not None:
            self._arrays.move_to_end(blob)
            return a
        a = self._store.array(run_id, stage)
        if blob is not None and a.nbytes <= self._limit:
            a.flags.writeable = False  # shared by every reader after this one
            self._arrays[blob] = a
            self._bytes += a.nbytes
            while self._bytes > self._limit:
                self._bytes -= self._arrays.popitem(last=False)[1].nbytes
        return a


class Ahead:
    """One background thread: ``stored(run_id)`` hands it a run that is now in the store.

    Everything it makes is cached in the store, exactly as the budget would make it; the budget
    then reads it. A failure here is left for the budget, which makes the same call again and
    reports it, so nothing is lost or said twice.
    """

    def __init__(self, store: Store, pairs: list):
        self._store = _Kept(store)
        self._pairs = [(p.a.run_id, p.b.run_id) for p in pairs]
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="kit-ahead", daemon=True)
        self._thread.start()

    def stored(self, run_id: str) -> None:
        self._queue.put(run_id)

    def close(self, wait: bool = True) -> None:
        """No more runs; ``wait`` for what is queued (an interrupted plan does not wait)."""
        self._queue.put(None)
        if wait:
            self._thread.join()

    def _work(self) -> None:
        # The runs hold the cores. On more BLAS threads the analysis would take cores from them,
        # and OpenBLAS's idle threads spin-wait after every call: 2.9 CPU seconds in the
        # paper's matrix, measured, for work one thread does as fast.
        with threadpool_limits(1):
            while (run_id := self._queue.get()) is not None:
                try:
                    self._analyse(run_id)
                except Exception:  # noqa: BLE001 - the budget repeats the call and reports it
                    pass

    def _analyse(self, run_id: str) -> None:
        # a Store to the analysis: its own array(), every other attribute the store's
        store = cast(Store, self._store)
        if has_verdicts(store.run(run_id).spec):
            run_verdicts(store, run_id)
        for a, b in self._pairs:
            if run_id in (a, b) and store.has_run(a) and store.has_run(b):
                compare_runs(store, a, b)
