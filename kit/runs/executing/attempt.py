"""One attempt at one run: the worker process in the stack's interpreter, in a folder of its own.

Every executor makes runs this way: the local one in kit's own process tree, the cluster one
inside a Dask worker on a node. kit.envs.launch starts, tracks and ends the worker processes
(each under a tether that ends all a run started, and dies with the process that started it);
here is what a run asks of one, within which bounds (its deadline, its answer, its manifest, its
outputs' bytes), and how its failure is said: one line, foreign text made one line
(core.errors.one_line).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Annotated

import msgspec

from ...core.atomic import write_bytes
from ...core.documents import DocumentError, decode, decode_manifest
from ...core.errors import KitError, one_line
from ...core.paths import subdir
from ...core.small_files import read_head
from ...core.spec import RunSpec
from ...data.pipelines import pipeline_file, pipeline_info
from ...data.requires import names
from ...envs import launch
from ...envs.containers.command import CONTAINED
from ...envs.stacks import Stack
from ...worker.text import LOG_BYTES, left_out

TAIL = 20  # lines of a failed worker's stderr kept for the message
MANIFEST_BYTES = 64 * 1024**2  # a manifest past this is not one kit's worker writes
OUTPUT_BYTES = 16 * 1024**3  # a run's outputs in all (KIT_MAX_OUTPUT_BYTES says another)
ANSWER_CHARS = 2_000  # a worker's error: its own words around foreign text it cut to LINE_CHARS


class WorkerFailed(KitError):
    """A worker process that did not finish its run; ``tail`` holds the end of its stderr."""

    printed = ""  # what the run printed (its stderr's end, for its log), set where it is known

    def __init__(self, message: str, tail: str = ""):
        super().__init__(message)
        self.tail = tail


class RunTimedOut(WorkerFailed):
    """A run past its deadline (--timeout): ended with everything it started, stored as
    nothing; the plan goes on without it."""


def max_output_bytes() -> int:
    """What a run's outputs may hold in all, in bytes: KIT_MAX_OUTPUT_BYTES, else 16 GiB."""
    raw = os.environ.get("KIT_MAX_OUTPUT_BYTES", "").strip()
    try:
        return max(0, int(raw)) if raw else OUTPUT_BYTES
    except ValueError:
        raise KitError(
            f"KIT_MAX_OUTPUT_BYTES={one_line(raw, 40)!r} is not a number of bytes"
        ) from None


def failed(spec: RunSpec, proc: subprocess.CompletedProcess) -> WorkerFailed:
    """The error of a worker process that ended without making its run: one line, and the end
    of its stderr."""
    return WorkerFailed(_failure(spec, proc), "\n".join(proc.stderr.splitlines()[-TAIL:]))


def timed_out(spec: RunSpec, seconds: float) -> RunTimedOut:
    return RunTimedOut(f"run {spec.run_id[:12]}: past its {seconds:g} s deadline (--timeout)")


def attempt(
    spec: RunSpec,
    stack: Stack,
    dataset_file: Path,
    folder: Path,
    input_npy: bytes | None = None,
    warm=None,
    timeout: float | None = None,
) -> dict:
    """Run ``spec`` in ``stack`` inside the empty ``folder``; its arrays land in ``folder/out``,
    its relative writes in ``folder/work`` (gone with the folder).

    ``warm``: a kit.runs.executing.warm.WarmPool to make it in a warm worker (a fresh process when None,
    or when the spec asks for one). ``timeout``: seconds it may take (RunTimedOut past them).
    Returns the worker's manifest; raises WorkerFailed with a one-line reason otherwise."""
    folder = Path(folder).resolve()
    request = json.loads(spec.worker_json())
    request["max_output_bytes"] = max_output_bytes()
    log = None
    if spec.pipeline:  # a lab's file: the stored copy, verified, and where its traceback goes
        info = pipeline_info(spec.pipeline)
        log = _log_of(spec)
        # the worker writes its traceback in the run's folder (the only place a worker in a
        # container may write) and names the log kit then keeps it in
        request.update(
            pipeline_file=str(pipeline_file(spec.pipeline).resolve()),
            pipeline_name=info["name"],
            log=str(folder / TRACEBACK),
            log_named=str(log),
            requires=names(info["requires"]),
        )  # their versions go in its manifest
    (folder / "spec.json").write_text(json.dumps(request))
    out = folder / "out"
    out.mkdir()
    (folder / "work").mkdir()  # the run's working folder: what it writes there is not kept
    extra = []
    if spec.kind in ("torch", "perturb", "feed"):  # the fixed arrays it starts from
        if input_npy is None:
            raise KitError(f"a {spec.kind} run needs the stored arrays of run {spec.input[:12]}")
        (folder / "input.npy").write_bytes(input_npy)
        extra = ["--input", str(folder / "input.npy")]
    dataset_file = Path(dataset_file).resolve()
    manifest_file = out / "manifest.json"
    try:
        if warm is not None and spec.process != "fresh":
            printed = warm.run(
                spec, stack, dataset_file, folder, folder / "input.npy" if extra else None, timeout
            )
        else:
            printed = _fresh(spec, stack, dataset_file, folder, extra, timeout)
    except WorkerFailed as e:
        keep_log(log, getattr(e, "printed", ""), failed=True, written=folder / TRACEBACK)
        raise
    keep_log(log, printed, failed=False)
    if not manifest_file.exists():
        raise WorkerFailed(f"the worker in stack {spec.stack!r} wrote no manifest")
    _bound_outputs(spec, out)
    manifest = read_manifest(spec, manifest_file)
    if isinstance(stack.command, CONTAINED):  # what the run ran in, exactly (its id), and how
        a = stack.attributes
        manifest["image"] = {
            "id": stack.command.image,
            "runtime": stack.command.route,
            "base": a.get("base"),
            "release": a.get("release"),
            "glibc": a.get("glibc"),
            "base_id": a.get("base_id"),
            "diff_ids": a.get("diff_ids") or [],
        }
    return manifest


def _fresh(spec, stack, dataset_file, folder, extra, timeout) -> str:
    """The run in a process of its own; returns what it printed (the end of its stderr)."""
    try:
        proc = launch.run(
            stack.command,
            [
                "--spec",
                str(folder / "spec.json"),
                "--dataset",
                str(dataset_file),
                "--out",
                str(folder / "out"),
                *extra,
            ],
            spec,
            cwd=folder / "work",
            timeout=timeout,
            writable=(folder,),
        )
    except launch.PastDeadline:
        raise timed_out(spec, timeout) from None
    except launch.TooLong as e:
        raise WorkerFailed(f"the worker in stack {spec.stack!r} answered with {e}") from None
    said = proc.stdout.strip()
    if said:  # its answer: ok, or what it could not do, in one line
        answer = answer_of(spec, said.splitlines()[0])
        if not answer.ok:
            refused = WorkerFailed(
                f"worker failed in stack {spec.stack!r}: {one_line(answer.error, ANSWER_CHARS)}",
                "\n".join(answer.tail),
            )
            refused.printed = proc.stderr
            raise refused
    if proc.returncode != 0 or not said:
        err = failed(spec, proc)
        err.printed = proc.stderr
        raise err
    return proc.stderr


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    """A worker's answer to one request (kit.worker.__main__._serve, or a fresh worker's one)."""

    ok: bool
    error: Annotated[str, msgspec.Meta(max_length=64 * 1024)] = ""
    tail: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=4096)]], msgspec.Meta(max_length=100)
    ] = []


def answer_of(spec: RunSpec, line) -> _Answer:
    try:
        return decode(line, _Answer, "answer")
    except DocumentError:
        raise WorkerFailed(
            f"the worker in stack {spec.stack!r} answered with a line that "
            f"is not an answer: {one_line(line, 80)!r}"
        ) from None


def keep_log(log: Path | None, printed: str, failed: bool, written: Path | None = None) -> None:
    """What a pipeline printed (the end of its stderr, fd 1 included) into its run's log, after
    the traceback the worker wrote in ``written`` on a failure (a worker's file: read bounded,
    never through a link), else in place of an older attempt's."""
    if log is None:
        return
    traceback = b""
    if failed and written:
        traceback = read_head(written, 2 * LOG_BYTES + 1) or b""
        if len(traceback) > 2 * LOG_BYTES:  # more than kit's worker writes: its head, said so
            traceback = traceback[: 2 * LOG_BYTES] + left_out(
                written.stat().st_size - 2 * LOG_BYTES
            )
    if not printed.strip() and not traceback:  # a run that printed nothing and worked: no
        if not failed:  # older traceback kept
            log.unlink(missing_ok=True)
        return
    said = (
        f"\n--- what the run printed (the last {launch.TAIL_BYTES // 1024} KiB) ---\n"
        f"{printed}".encode("utf-8", "replace")
        if printed.strip()
        else b""
    )
    write_bytes(log, traceback + said)
    _bound_log(log)


def _bound_log(log: Path) -> None:
    """A log past its bound (the worker's traceback and the end of what the run printed: what
    else wrote there is the pipeline's doing) cut to its head and tail, read by seeks."""
    limit = LOG_BYTES + 2 * launch.TAIL_BYTES  # the traceback, the tail and its heading
    size = log.stat().st_size
    if size <= limit:
        return
    with open(log, "rb") as f:
        head = f.read(limit // 2)
        f.seek(size - limit // 2)
        tail = f.read(limit // 2)
    write_bytes(log, head + left_out(size - len(head) - len(tail)) + tail)


def _bound_outputs(spec: RunSpec, out: Path) -> None:
    """The outputs' bytes on disk, by their sizes, before any is read: within the budget."""
    bound = max_output_bytes()
    total = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    if total > bound + MANIFEST_BYTES:  # the .npy headers and the manifest beside the bytes
        raise WorkerFailed(
            f"run {spec.run_id[:12]}: its outputs hold {total:,} bytes, more than "
            f"the {bound:,} a run may return (KIT_MAX_OUTPUT_BYTES)"
        )


def read_manifest(spec: RunSpec, path: Path) -> dict:
    """The worker's manifest, by its schema: a worker runs a lab's code, so what it wrote is
    checked as a bundle's would be before anything reads it (and its size before it is read)."""
    try:
        if path.stat().st_size > MANIFEST_BYTES:
            raise DocumentError(f"it holds more than {MANIFEST_BYTES // 1024**2} MiB")
        with open(path, "rb") as f:
            return decode_manifest(f.read(MANIFEST_BYTES + 1))
    except DocumentError as e:
        raise WorkerFailed(
            f"the worker in stack {spec.stack!r} wrote a manifest that is not "
            f"one kit's worker writes ({one_line(e)})"
        ) from None


def _signal(number: int) -> str:
    """ "signal 11 (SIGSEGV)"; SIGKILL with who sends it unasked: the kernel out of memory."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    if number == signal.SIGKILL:
        return f"signal {number} ({name}: out of memory, or another process killed it)"
    return f"signal {number} ({name})"


TRACEBACK = "traceback.log"  # a failed pipeline's traceback, in its run's folder


def _log_of(spec: RunSpec) -> Path:
    """Where a lab pipeline's run keeps its traceback and what it printed."""
    return subdir("logs").resolve() / f"pipeline-{spec.run_id[:12]}.log"


def _failure(spec: RunSpec, proc) -> str:
    """One line: what failed where, and the fix when the stack itself is broken."""
    lines = proc.stderr.strip().splitlines()
    last = one_line(lines[-1]) if lines else "no output"
    if spec.pipeline:  # the pipeline's own code ended the process (os._exit, a C exit, a crash)
        if proc.returncode < 0:
            how = f"the worker was killed by {_signal(-proc.returncode)} while the pipeline ran"
        elif proc.returncode == 0:
            how = "the pipeline ended the worker (os._exit or exit, status 0) before it answered"
        else:
            how = f"the pipeline ended the worker (exit {proc.returncode}) before it answered"
        said = (
            f"; its last line: {last}; what it printed: {_log_of(spec)}"
            if lines
            else "; it printed nothing"
        )
        return f"run {spec.run_id[:12]}: {how}{said}"
    if proc.returncode < 0:
        return f"worker in stack {spec.stack!r} was killed by {_signal(-proc.returncode)}"
    # a lab pipeline's own failed import is its line (the worker says it), not the stack's
    if any(x in proc.stderr for x in ("ImportError", "ModuleNotFoundError", "cannot open shared")):
        return (
            f"stack {spec.stack!r} cannot import its libraries ({last}); "
            f"`kit stacks build {spec.stack}` repairs a damaged stack"
        )
    return f"worker failed in stack {spec.stack!r} (exit {proc.returncode}): {last}"
