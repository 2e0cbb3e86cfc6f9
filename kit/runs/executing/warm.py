"""Warm workers: a worker process per (stack, threads, environment) that makes run after run,
importing numpy, scipy and scikit-learn once instead of once per run.

The process is started exactly as a fresh worker is (the thread variables fixed at its start,
only kit/worker on its path, dying with kit); the `process` factor compares a run made in a
fresh process with the same run made in a warm one that made another run first, bitwise.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Annotated

import msgspec

from ...core.documents import DocumentError, decode
from ...core.paths import subdir
from ...core.spec import RunSpec, seeds
from ...envs import launch
from ...envs.stacks import Stack
from .attempt import TAIL, WorkerFailed, failed

PRIMER_SEED = 7919  # the other run a "warm" run of the process factor follows


class _Warm:
    """One serving worker process, and how many runs it has made."""

    def __init__(self, stack: Stack, spec: RunSpec):
        self.err = tempfile.TemporaryFile(mode="w+")  # read only on a failure: never blocks
        self.proc = launch.start(stack.command, ["--serve"], spec, subdir("tmp"),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.runs = 0

    def ask(self, spec: RunSpec, request: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:  # the process is gone: said as a fresh process's failure would be
            gone = subprocess.CompletedProcess([], self.proc.wait(), "", self._tail())
            raise failed(spec, gone)
        self.runs += 1
        try:
            answer = _answer(spec, line)
        except WorkerFailed:
            # what follows on its stdout can no longer be matched to requests: end it
            launch.stop(self.proc)
            raise
        if not answer.ok:
            raise WorkerFailed(f"worker failed in stack {spec.stack!r}: {answer.error}",
                               "\n".join(answer.tail))

    def _tail(self) -> str:
        self.err.seek(0)
        return "\n".join(self.err.read().splitlines()[-TAIL:])

    def close(self) -> None:
        launch.stop(self.proc, grace=10)  # end of requests: the worker exits, or is killed
        self.err.close()


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    """A warm worker's answer to one request (kit.worker.__main__._serve)."""
    ok: bool
    error: Annotated[str, msgspec.Meta(max_length=64 * 1024)] = ""
    tail: Annotated[list[Annotated[str, msgspec.Meta(max_length=4096)]],
                    msgspec.Meta(max_length=100)] = []


def _answer(spec: RunSpec, line: str) -> _Answer:
    try:
        return decode(line, _Answer, "answer")
    except DocumentError:
        raise WorkerFailed(f"the warm worker in stack {spec.stack!r} answered with a line that "
                           f"is not an answer: {line[:80]!r}") from None


class WarmPool:
    """Idle warm workers by what fixes a process at its start; one run at a time each."""

    def __init__(self):
        self._idle: dict = {}
        self._all: list = []
        self._lock = threading.Lock()

    @staticmethod
    def _key(spec: RunSpec, stack: Stack) -> tuple:
        return (stack.command, spec.threads, spec.env, spec.deterministic)

    def _take(self, spec, stack) -> _Warm:
        with self._lock:
            idle = self._idle.get(self._key(spec, stack))
            if idle:
                return idle.pop()
        w = _Warm(stack, spec)
        with self._lock:
            self._all.append(w)
        return w

    def _give(self, spec, stack, w: _Warm) -> None:
        with self._lock:
            self._idle.setdefault(self._key(spec, stack), []).append(w)

    def run(self, spec: RunSpec, stack: Stack, dataset_file: Path, folder: Path,
            input_file: Path | None) -> None:
        """Make ``spec`` in a warm worker; its arrays and manifest land in ``folder/out``."""
        w = self._take(spec, stack)
        try:
            if spec.process == "warm" and w.runs == 0:
                self._prime(w, spec, dataset_file, folder, input_file)
            w.ask(spec, {"spec": str(folder / "spec.json"), "dataset": str(dataset_file),
                         "out": str(folder / "out"), "input": input_file and str(input_file)})
        except WorkerFailed:
            if w.proc.poll() is not None:  # dead: never handed out again
                w.close()
                raise
            self._give(spec, stack, w)
            raise
        self._give(spec, stack, w)

    @staticmethod
    def _prime(w: _Warm, spec, dataset_file, folder, input_file) -> None:
        """Another run first (other seeds, thrown away): the warm run follows real work."""
        other = folder / "primer"
        (other / "out").mkdir(parents=True)
        if spec.pipeline:  # a lab's file: its own request (the file's path), at its own seeds
            request = json.loads((folder / "spec.json").read_text())
            # its log beside the run's, in logs/: the run's folder is gone when the line is read
            request.update(seeds={k: PRIMER_SEED for k in request["seeds"]},
                           log=str(subdir("logs") / f"pipeline-{spec.run_id[:12]}-primer.log"))
            (other / "spec.json").write_text(json.dumps(request))
        else:
            (other / "spec.json").write_text(spec.with_(seeds=seeds(PRIMER_SEED)).worker_json())
        try:
            w.ask(spec, {"spec": str(other / "spec.json"), "dataset": str(dataset_file),
                         "out": str(other / "out"), "input": input_file and str(input_file)})
        except WorkerFailed as e:  # said as the primer's: its seeds are not the run's
            raise WorkerFailed(f"{e} (in the warm worker's primer run, every seed "
                               f"{PRIMER_SEED})", e.tail) from None

    def close(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], {}
        for w in workers:
            w.close()
