"""One attempt at one run: the worker process in the stack's interpreter, in a folder of its own.

Every executor makes runs this way: the local one in kit's own process tree, the cluster one
inside a Dask worker on a node. kit.envs.launch starts, tracks and ends the worker processes
(they die with the process that started them); here is what a run asks of one, and how its
failure is said.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ...core.documents import DocumentError, decode_manifest
from ...core.errors import KitError
from ...core.paths import subdir
from ...core.spec import RunSpec
from ...data.pipelines import pipeline_file, pipeline_info
from ...data.requires import names
from ...envs import launch
from ...envs.stacks import Stack

TAIL = 20                   # lines of a failed worker's stderr kept for the message


class WorkerFailed(KitError):
    """A worker process that did not finish its run; ``tail`` holds the end of its stderr."""

    def __init__(self, message: str, tail: str = ""):
        super().__init__(message)
        self.tail = tail


def failed(spec: RunSpec, proc: subprocess.CompletedProcess) -> WorkerFailed:
    """The error of a worker process that ended without making its run: one line, and the end
    of its stderr."""
    return WorkerFailed(_failure(spec, proc), "\n".join(proc.stderr.splitlines()[-TAIL:]))


def attempt(spec: RunSpec, stack: Stack, dataset_file: Path, folder: Path,
            input_npy: bytes | None = None, warm=None) -> dict:
    """Run ``spec`` in ``stack`` inside the empty ``folder``; its arrays land in ``folder/out``.

    ``warm``: a kit.runs.executing.warm.WarmPool to make it in a warm worker (a fresh process when None,
    or when the spec asks for one). Returns the worker's manifest; raises WorkerFailed with a
    one-line reason otherwise."""
    folder = Path(folder)
    request = json.loads(spec.worker_json())
    if spec.pipeline:  # a lab's file: the stored copy, verified, and where its traceback goes
        info = pipeline_info(spec.pipeline)
        request.update(pipeline_file=str(pipeline_file(spec.pipeline)), pipeline_name=info["name"],
                       log=str(subdir("logs") / f"pipeline-{spec.run_id[:12]}.log"),
                       requires=names(info["requires"]))  # their versions go in its manifest
    (folder / "spec.json").write_text(json.dumps(request))
    out = folder / "out"
    out.mkdir()
    extra = []
    if spec.kind in ("torch", "perturb", "feed"):  # the fixed arrays it starts from
        if input_npy is None:
            raise KitError(f"a {spec.kind} run needs the stored arrays of run {spec.input[:12]}")
        (folder / "input.npy").write_bytes(input_npy)
        extra = ["--input", str(folder / "input.npy")]
    manifest_file = out / "manifest.json"
    if warm is not None and spec.process != "fresh":
        warm.run(spec, stack, dataset_file, folder, folder / "input.npy" if extra else None)
    else:
        proc = launch.run(stack.command, ["--spec", str(folder / "spec.json"), "--dataset",
                                          str(dataset_file), "--out", str(out), *extra],
                          spec, cwd=folder)
        if proc.returncode != 0 or not manifest_file.exists():
            raise failed(spec, proc)
    if not manifest_file.exists():
        raise WorkerFailed(f"the worker in stack {spec.stack!r} wrote no manifest")
    return read_manifest(spec, manifest_file)


def read_manifest(spec: RunSpec, path: Path) -> dict:
    """The worker's manifest, by its schema: a worker runs a lab's code, so what it wrote is
    checked as a bundle's would be before anything reads it."""
    try:
        return decode_manifest(path.read_bytes())
    except DocumentError as e:
        raise WorkerFailed(f"the worker in stack {spec.stack!r} wrote a manifest that is not "
                           f"one kit's worker writes ({e})") from None


def _failure(spec: RunSpec, proc) -> str:
    """One line: what failed where, and the fix when the stack itself is broken."""
    lines = proc.stderr.strip().splitlines() or ["no output"]
    last = lines[-1]
    if proc.returncode < 0:
        return f"worker in stack {spec.stack!r} was killed by signal {-proc.returncode}"
    # a lab pipeline's own failed import is its line (the worker says it), not the stack's
    if not spec.pipeline and any(x in proc.stderr for x in ("ImportError", "ModuleNotFoundError",
                                                            "cannot open shared")):
        return (f"stack {spec.stack!r} cannot import its libraries ({last}); "
                f"`kit stacks build {spec.stack}` repairs a damaged stack")
    return f"worker failed in stack {spec.stack!r} (exit {proc.returncode}): {last}"
