"""Warm workers: a worker process per (stack, threads, environment) that makes run after run,
importing numpy, scipy and scikit-learn once instead of once per run.

The process is started exactly as a fresh worker is (the thread variables fixed at its start,
only kit/worker on its path, dying with kit); the `process` factor compares a run made in a
fresh process with the same run made in a warm one that made another run first, bitwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ...core import scratch
from ...core.errors import one_line
from ...core.paths import subdir
from ...core.spec import RunSpec, seeds
from ...core.spools import discard
from ...envs import launch
from ...envs.stacks import Stack
from .attempt import ANSWER_CHARS, TRACEBACK, WorkerFailed, answer_of, failed, keep_log, timed_out

PRIMER_SEED = 7919  # the other run a "warm" run of the process factor follows


def primer_log(spec: RunSpec) -> Path:
    return subdir("logs").resolve() / f"pipeline-{spec.run_id[:12]}-primer.log"


class _Warm:
    """One serving worker process, and how many runs it has made."""

    def __init__(self, stack: Stack, spec: RunSpec, root: Path):
        # ``root``: where the runs it makes have their folders (a container worker's one
        # writable mount)
        self.worker = launch.start(
            stack.command, ["--serve"], spec, root, requests=True, writable=(root,)
        )
        self.proc = self.worker.proc
        self.runs = 0
        # a run left processes that kit then ended: a pool the pipeline keeps between calls
        # (joblib's loky executor, a module-level multiprocessing.Pool) is broken in this
        # process now, and its next run would fail (TerminatedWorkerError) or hang, so the
        # worker makes no other run: the next one starts in a fresh worker, as under --fresh
        self.spent = False

    def ask(
        self, spec: RunSpec, request: dict, timeout: float | None = None, end: bool = True
    ) -> str:
        """Make one run; returns what it printed (the end of the worker's stderr meanwhile).
        Past ``timeout`` seconds the worker is ended with its group (RunTimedOut). ``end``:
        what the run left running is ended now (False: a primer's, which the run after it in
        this worker may use, as a notebook's second call uses the first's pool)."""
        self.worker.tail()  # what came before this run is not its own
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.worker.send(request)
            line = self.worker.answer(deadline)
        except (BrokenPipeError, OSError):
            line = b""
        except launch.PastDeadline:
            self.worker.kill()
            assert timeout is not None  # a deadline passes only where one was set
            raise self._with_printed(timed_out(spec, timeout)) from None
        except launch.TooLong as e:
            self.worker.kill()  # what follows can no longer be matched to requests
            raise self._with_printed(
                WorkerFailed(f"the warm worker in stack {spec.stack!r} answered with {e}")
            ) from e
        if not line:  # the process is gone: said as a fresh process's failure would be
            self.worker.kill(grace=5)  # its own status, once its tether has ended the rest
            gone = subprocess.CompletedProcess([], self.proc.wait(), "", self.worker.tail(wait=5))
            err = failed(spec, gone)
            err.printed = gone.stderr
            raise err
        if end and self.worker.end_others():  # what the run forked ends with it
            self.spent = True
        printed = self.worker.tail(settle=True)
        self.runs += 1
        try:
            answer = answer_of(spec, line)
        except WorkerFailed as e:
            # what follows on its channel can no longer be matched to requests: end it
            self.worker.kill()
            e.printed = printed
            raise
        if not answer.ok:
            refused = WorkerFailed(
                f"worker failed in stack {spec.stack!r}: {one_line(answer.error, ANSWER_CHARS)}",
                "\n".join(answer.tail),
            )
            refused.printed = printed
            raise refused
        return printed

    def _with_printed(self, e: WorkerFailed) -> WorkerFailed:
        e.printed = self.worker.tail(wait=5)
        return e

    def close(self) -> None:
        launch.stop(self.worker, grace=10)  # end of requests: the worker exits, or is killed


class WarmPool:
    """Idle warm workers by what fixes a process at its start; one run at a time each."""

    def __init__(self, root: Path | None = None):
        self.root = root  # where its runs' folders are made (None: a folder of its own)
        self._idle: dict = {}
        self._all: list = []
        self._lock = threading.Lock()
        self._own: Path | None = None  # its container workers' folder (``folder``)

    def folder(self, stack: Stack) -> Path:
        """Where a run in ``stack``'s warm worker has its folder: the pool's root; without one,
        a folder of the pool's own outside KIT_HOME (kit.core.scratch), which its workers stand
        in between runs and a container worker's one writable mount (never all of the folder
        where other runs' folders are)."""
        if self.root is not None:
            return self.root
        with self._lock:
            if self._own is None:  # run-PID-...: swept with the runs' folders once kit is gone
                self._own = Path(
                    tempfile.mkdtemp(dir=scratch.root(), prefix=f"{scratch.RUN}{os.getpid()}-warm-")
                )
            return self._own

    @staticmethod
    def _key(spec: RunSpec, stack: Stack) -> tuple:
        return (stack.command, spec.threads, spec.env, spec.deterministic)

    def _take(self, spec, stack) -> _Warm:
        with self._lock:
            idle = self._idle.get(self._key(spec, stack))
            if idle:
                return idle.pop()
        w = _Warm(stack, spec, self.folder(stack))
        with self._lock:
            self._all.append(w)
        return w

    def _give(self, spec, stack, w: _Warm) -> None:
        with self._lock:
            self._idle.setdefault(self._key(spec, stack), []).append(w)

    def run(
        self,
        spec: RunSpec,
        stack: Stack,
        dataset_file: Path,
        folder: Path,
        input_file: Path | None,
        timeout: float | None = None,
    ) -> str:
        """Make ``spec`` in a warm worker; its arrays and manifest land in ``folder/out``, its
        relative writes in ``folder/work``. Returns what it printed."""
        w = self._take(spec, stack)
        try:
            if spec.process == "warm" and w.runs == 0:
                self._prime(w, spec, dataset_file, folder, input_file, timeout)
            printed = w.ask(
                spec,
                {
                    "spec": str(folder / "spec.json"),
                    "dataset": str(dataset_file),
                    "out": str(folder / "out"),
                    "cwd": str(folder / "work"),
                    "input": input_file and str(input_file),
                },
                timeout,
            )
        except WorkerFailed:
            self._back(spec, stack, w)
            raise
        self._back(spec, stack, w)
        return printed

    def _back(self, spec, stack, w: _Warm) -> None:
        """A worker after its run: idle again, or closed (dead, or spent: never handed out
        again)."""
        if w.proc.poll() is not None or w.spent:
            w.close()
            with self._lock:
                if w in self._all:
                    self._all.remove(w)
        else:
            self._give(spec, stack, w)

    @staticmethod
    def _prime(w: _Warm, spec, dataset_file, folder, input_file, timeout) -> None:
        """Another run first (other seeds, thrown away): the warm run follows real work."""
        other = folder / "primer"
        (other / "out").mkdir(parents=True)
        (other / "work").mkdir()
        if spec.pipeline:  # a lab's file: its own request (the file's path), at its own seeds
            request = json.loads((folder / "spec.json").read_text())
            # its log beside the run's, in logs/: the run's folder is gone when the line is read
            request.update(
                seeds={k: PRIMER_SEED for k in request["seeds"]},
                log=str(other / TRACEBACK),
                log_named=str(primer_log(spec)),
            )
            (other / "spec.json").write_text(json.dumps(request))
        else:
            (other / "spec.json").write_text(spec.with_(seeds=seeds(PRIMER_SEED)).worker_json())
        try:
            w.ask(
                spec,
                {
                    "spec": str(other / "spec.json"),
                    "dataset": str(dataset_file),
                    "out": str(other / "out"),
                    "cwd": str(other / "work"),
                    "input": input_file and str(input_file),
                },
                timeout,
                end=False,
            )
        except WorkerFailed as e:  # said as the primer's: its seeds are not the run's
            if spec.pipeline:
                keep_log(primer_log(spec), "", failed=True, written=other / TRACEBACK)
            said = type(e)(
                f"{e} (in the warm worker's primer run, every seed {PRIMER_SEED})", e.tail
            )
            said.printed = getattr(e, "printed", "")
            raise said from None

    def close(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], {}
            own, self._own = self._own, None
        for w in workers:
            w.close()
        if own is not None:
            discard(own)
