"""Entry point: ``python -m kit.worker --spec S.json --dataset D.json --out DIR``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import BinaryIO

from .text import head_and_tail


def _probe(n=1200, repeats=4):
    """The paper's probe: does the thread setting change how much CPU a matrix product uses?"""
    import numpy as np

    a = np.random.default_rng(0).random((n, n))
    a @ a  # warm up: load the BLAS and start its threads
    w, c = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        a @ a
    return {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c, "n": n}


def _die_with_parent():
    """Exit as soon as our parent, KIT_PARENT_PID, is gone (a kill -9 leaves no orphan): kit's
    tether (kit.core.tether), which ends what a run started when kit dies, or kit itself.

    Linux: the kernel sends SIGKILL (PR_SET_PDEATHSIG); everywhere: a thread polls the parent.
    """
    parent = int(os.environ.get("KIT_PARENT_PID") or 0)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes  # Linux alone
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def orphaned():
        return os.getppid() != parent

    if orphaned():  # the parent died before we could ask to die with it
        os._exit(1)

    def watch():
        while True:
            time.sleep(0.5)
            if orphaned():
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


# where the worker answers kit (KIT_CHANNEL's pipe), never fd 1; where a serving worker reads
# kit's requests (its stdin as started)
_CHANNEL: BinaryIO | None = None
_REQUESTS: BinaryIO | None = None


def _take_channel():
    """Answers go on kit's own pipe (the fd in KIT_CHANNEL), requests come on a private copy of
    stdin; fd 1 then points at stderr and fd 0 at /dev/null, so whatever a pipeline, a tool it
    starts or a C library prints lands in the run's log, and nothing it reads eats a request.
    A process the pipeline forks gets /dev/null in their place: it can neither answer nor ask.
    Without KIT_CHANNEL (the worker run by hand) stdout and stdin are used as they are."""
    global _CHANNEL, _REQUESTS
    fd = os.environ.pop("KIT_CHANNEL", None)  # not passed on to what the pipeline starts
    if fd is None:
        _CHANNEL, _REQUESTS = sys.stdout.buffer, sys.stdin.buffer
        return
    fd = int(fd)
    requests = os.dup(0)
    for own in (fd, requests):
        os.set_inheritable(own, False)  # an exec'd tool never holds them
    null = os.open(os.devnull, os.O_RDWR)
    sys.stdout.flush()
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)

    def blind():  # in a forked child: both ends are /dev/null from now on
        n = os.open(os.devnull, os.O_RDWR)
        os.dup2(n, fd)
        os.dup2(n, requests)
        os.close(n)

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=blind)
    _CHANNEL = os.fdopen(fd, "wb", buffering=0)
    _REQUESTS = os.fdopen(requests, "rb")


def _say(obj) -> None:
    """One JSON line on kit's channel."""
    assert _CHANNEL is not None, "the channel is opened before anything is said"
    _CHANNEL.write((json.dumps(obj, sort_keys=True) + "\n").encode())
    _CHANNEL.flush()


def _reap() -> None:
    """Collect the children a run forked and kit ended: no zombie of the worker is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except (ChildProcessError, OSError):
            return
        if not pid:
            return


class _Usage(Exception):
    """A request the worker cannot act on (a missing input, a lab pipeline's mistake): one line."""


_IMPORTED: list = []  # a warm worker imports once: its later runs record an import of 0 s


def run_one(spec_path, dataset_path, out, input_path=None):
    """Make one run: every stage's array into ``out``, then its manifest (last, atomically)."""
    with open(spec_path) as f:
        spec = json.load(f)
    if spec.get("pipeline"):
        arrays, timings, t0 = _run_lab(spec)
        # the manifest's keys are sorted: the order run returned its outputs in is kept here
        extra = {
            "seeds": spec["seeds"],
            "outputs": list(arrays),
            "max_output_bytes": spec.get("max_output_bytes"),
        }
        if spec.get("requires"):  # the packages its REQUIRES added: what this stack holds of them
            from .fingerprint import installed

            extra["packages"] = installed(spec["requires"])
        if spec["dtype"] != "float64":  # floating outputs run left in another precision
            extra["not_in_dtype"] = [
                k
                for k, a in arrays.items()
                if a.dtype.kind == "f" and a.dtype.name != spec["dtype"]
            ]
        return _write(out, arrays, timings, extra, t0)
    # imports first, timed on their own: a stage's time is then its work alone
    w, c = time.perf_counter(), time.process_time()
    import numpy as np

    if spec.get("kind", "pipeline") == "torch":
        import torch  # noqa: F401
    else:
        from .pipeline import preload

        preload()
    imported = (time.perf_counter() - w, time.process_time() - c) if not _IMPORTED else (0.0, 0.0)
    _IMPORTED.append(True)
    with open(dataset_path) as f:
        data = json.load(f)
    t0 = time.time()
    extra = {}
    if spec.get("kind", "pipeline") == "torch":
        from .torch_mlp import run_torch

        if not input_path:
            raise _Usage("a torch run needs --input EMBEDDING.npy")
        arrays, timings, extra["torch_run"] = run_torch(
            np.load(input_path),
            data["labels"],
            data["n_train"],
            spec["seeds"],
            device=spec["device"],
            deterministic=spec["deterministic"],
            threads=spec["threads"],
        )
    elif spec.get("kind") == "perturb":
        from .pipeline import run_perturbed

        if not input_path:
            raise _Usage("a perturb run needs --input EMBEDDING.npy")
        arrays, timings = run_perturbed(
            np.load(input_path),
            data["labels"],
            data["n_train"],
            spec["seeds"],
            spec["perturb"],
            jobs=spec["threads"],
        )
    elif spec.get("kind") == "feed":
        from .pipeline import FEEDS, run_fed

        if not input_path:
            raise _Usage("a feed run needs --input ARRAYS.npz")
        with np.load(input_path, allow_pickle=False) as got:
            inputs = {k: got[k] for k in FEEDS[spec["feed"]]}
        arrays, timings = run_fed(
            inputs,
            data["labels"],
            data["n_train"],
            spec["feed"],
            dtype=spec["dtype"],
            svd_iters=spec["svd_iters"],
            seeds=spec["seeds"],
            embedding=spec.get("embedding", "randomized"),
            jobs=spec["threads"],
        )
    else:
        from .pipeline import resplit, run_pipeline

        seqs, labels, split = data["seqs"], data["labels"], spec.get("split", -1)
        if split >= 0:  # the split seed: the same records, another train/test assignment
            seqs, labels, order = resplit(seqs, labels, split)
        arrays, timings = run_pipeline(
            seqs,
            labels,
            data["n_train"],
            dtype=spec["dtype"],
            svd_iters=spec["svd_iters"],
            seeds=spec["seeds"],
            embedding=spec.get("embedding", "randomized"),
            jobs=spec["threads"],
        )
        if split >= 0:
            # which proteins were tested, as positions in the dataset's stored order
            arrays["split.test"] = order[data["n_train"] :].astype(np.int64)
            extra["seeds"] = dict(spec["seeds"], split=split)  # a named seed of the run
    extra.setdefault("seeds", spec["seeds"])
    extra["max_output_bytes"] = spec.get("max_output_bytes")
    _write(out, arrays, {"import": imported, **timings}, extra, t0)


def _run_lab(spec):
    """A lab's own pipeline file (kit.worker.contract): its outputs, in run's order, and times.
    A user's mistake or the pipeline's own exception is a _Usage of one line; the exception's
    traceback goes to the run's log, which the line names."""
    from .contract import ContractError, PipelineFailed, call, load

    t0 = time.time()
    w, c = time.perf_counter(), time.process_time()
    try:
        contract = load(spec["pipeline_file"], spec.get("pipeline_name"))
        if contract.sha256 != spec["pipeline"]:
            raise _Usage(
                f"pipeline file {spec['pipeline_file']} is not pipeline {spec['pipeline'][:12]}"
            )
        imported = (time.perf_counter() - w, time.process_time() - c)
        _IMPORTED.append(True)
        w, c = time.perf_counter(), time.process_time()
        arrays = call(contract, spec["seeds"], spec["dtype"])
    except ContractError as e:
        raise _Usage(str(e)) from None
    except PipelineFailed as e:
        log = spec.get("log")  # in the run's folder: kit keeps it as the log it names
        if log:
            os.makedirs(os.path.dirname(log), exist_ok=True)
            with open(log, "wb") as f:  # its head and tail: a 20 MB message never fills it
                f.write(head_and_tail(e.traceback.encode("utf-8", "replace")))
        named = spec.get("log_named") or log
        raise _Usage(e.line + (f"; its traceback: {named}" if named else "")) from None
    return (
        arrays,
        {"import": imported, "run": (time.perf_counter() - w, time.process_time() - c)},
        t0,
    )


def _write(out, arrays, timings, extra, t0):
    """Every array into ``out``, then the manifest (last, atomically)."""
    import numpy as np

    from .dtypes import canonical, sha256_of
    from .fingerprint import fingerprint

    stages = {}
    bound = extra.pop("max_output_bytes", None)
    total = sum(np.asarray(a).nbytes for a in arrays.values())
    if bound is not None and total > bound:  # refused before anything is written to disk
        raise _Usage(
            f"its outputs hold {total:,} bytes, more than the {bound:,} a run may "
            f"return (KIT_MAX_OUTPUT_BYTES)"
        )
    for name, a in arrays.items():
        a = canonical(a)  # the one stored form: its hash is its values' (kit.worker.dtypes)
        with _disk(out, f"output {name}.npy", a.nbytes):
            np.save(os.path.join(out, name + ".npy"), a, allow_pickle=False)
        stages[name] = {"sha256": sha256_of(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    manifest = {
        "stages": stages,
        "timings": {k: {"wall_s": w, "cpu_s": c} for k, (w, c) in timings.items()},
        "wall_s": time.time() - t0,
        # when the run's work began and ended here: a plan's timeline, and kit's cost between runs
        "started": t0,
        "finished": time.time(),
        "seeds": extra.pop("seeds"),
        "runs_before": len(_IMPORTED) - 1,  # in this process: 0 for a fresh one
        "env": fingerprint(),
    }
    manifest["env"]["packages"].update(extra.pop("packages", {}))
    manifest.update(extra)
    # manifest last: its presence tells the runner that every array before it is complete
    tmp = os.path.join(out, "manifest.json.tmp")
    text = json.dumps(manifest, indent=1, sort_keys=True)
    with _disk(out, "its manifest", len(text)), open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, "manifest.json"))


@contextmanager
def _disk(folder, what, need):
    """A full disk under a write of the worker's own is one line naming the disk and the folder
    (numpy said only "9600 requested and 1008 written"); any other OSError is raised as it is."""
    from .disk import full_disk

    try:
        yield
    except OSError as e:
        said = full_disk(e, folder, what, need)
        if said is None:
            raise
        raise _Usage(said) from None


def _serve():
    """A warm worker: one request per line on stdin (JSON: spec, dataset, out, input), one
    answer per line on stdout; the libraries are imported once, by the first run. Each run is
    made exactly as a fresh process makes it: the process's thread variables, its seeds from the
    spec, nothing of kit's kept between runs (the `process` factor checks this bitwise); a lab's
    file is imported once, as a notebook would, so its module-level state is the lab's own."""
    import traceback

    home = os.getcwd()
    for line in _REQUESTS:
        if not line.strip():
            continue
        _reap()  # what the last run forked, kit has ended since
        req = json.loads(line)
        try:
            if req.get("cwd"):  # the run's own folder: its relative writes go with it
                os.chdir(req["cwd"])
            run_one(req["spec"], req["dataset"], req["out"], req.get("input"))
            answer = {"ok": True}
        except _Usage as e:  # one line says it all (a lab pipeline's traceback is in its log)
            answer = {"ok": False, "error": str(e), "tail": []}
        except Exception as e:  # noqa: BLE001
            # the run failed; the worker lives on for the next one
            tail = traceback.format_exc().strip().splitlines()[-20:]
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}", "tail": tail}
        finally:
            os.chdir(home)
            sys.stdout.flush()
            sys.stderr.flush()
        _say(answer)
    return 0


def main(argv=None):
    _die_with_parent()
    _take_channel()
    ap = argparse.ArgumentParser(prog="python -m kit.worker")
    ap.add_argument("--spec", help="run specification (JSON)")
    ap.add_argument("--dataset", help="dataset (JSON: seqs, labels, n_train)")
    ap.add_argument("--out", help="empty directory for stage arrays + manifest")
    ap.add_argument(
        "--input",
        help="embedding (.npy) for the torch stage or a perturbation; "
        "a feed run's input arrays (.npz)",
    )
    ap.add_argument(
        "--fingerprint",
        action="store_true",
        help="print this interpreter's environment fingerprint (JSON) and exit",
    )
    ap.add_argument(
        "--serve",
        action="store_true",
        help="a warm worker: make the runs requested on stdin, one JSON line each",
    )
    ap.add_argument(
        "--probe-threads",
        action="store_true",
        help="time a matrix product: wall and CPU seconds (JSON) and exit",
    )
    args = ap.parse_args(argv)

    from .fingerprint import fingerprint

    if args.fingerprint:
        _say(fingerprint(include_torch=True))
        return 0
    if args.probe_threads:
        _say(_probe())
        return 0
    if args.serve:
        return _serve()
    if not (args.spec and args.dataset and args.out):
        ap.error("--spec, --dataset and --out are required")
    try:
        run_one(args.spec, args.dataset, args.out, args.input)
    except _Usage as e:
        sys.stderr.write(f"{e}\n")
        _say({"ok": False, "error": str(e), "tail": []})
        return 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    _say({"ok": True})  # answered, as a warm worker answers: kit tells this from an os._exit
    return 0


def _end(code) -> None:
    """Exit now, whatever the pipeline left: a thread it started that is not a daemon, or an
    atexit handler, kept a worker that had answered from exiting, and kit, which reads the
    channel to its end, waited for the run's deadline and threw a finished run away."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    try:
        status = main()
    except SystemExit as e:  # argparse's (its message is out): the code it would exit with
        status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if e.code is not None and not isinstance(e.code, int):
            sys.stderr.write(f"{e.code}\n")
    except BaseException:  # noqa: BLE001
        # kit's own failure: its traceback, as Python would print it
        import traceback

        traceback.print_exc()
        status = 1
    _end(status or 0)
