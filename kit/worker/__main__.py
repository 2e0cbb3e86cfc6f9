"""Entry point: ``python -m kit.worker --spec S.json --dataset D.json --out DIR``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time


def _sha256(a):
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


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
    """Exit as soon as the kit process that started us is gone (a kill -9 leaves no orphan).

    Linux: the kernel sends SIGKILL (PR_SET_PDEATHSIG); everywhere: a thread polls the parent.
    """
    import threading

    parent = int(os.environ.get("KIT_PARENT_PID") or 0)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes
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


def main(argv=None):
    _die_with_parent()
    ap = argparse.ArgumentParser(prog="python -m kit.worker")
    ap.add_argument("--spec", help="run specification (JSON)")
    ap.add_argument("--dataset", help="dataset (JSON: seqs, labels, n_train)")
    ap.add_argument("--out", help="empty directory for stage arrays + manifest")
    ap.add_argument("--input", help="embedding (.npy) for the torch stage or a perturbation")
    ap.add_argument("--fingerprint", action="store_true",
                    help="print this interpreter's environment fingerprint (JSON) and exit")
    ap.add_argument("--probe-threads", action="store_true",
                    help="time a matrix product: wall and CPU seconds (JSON) and exit")
    args = ap.parse_args(argv)

    from .fingerprint import fingerprint

    if args.fingerprint:
        json.dump(fingerprint(include_torch=True), sys.stdout, sort_keys=True)
        return 0
    if args.probe_threads:
        json.dump(_probe(), sys.stdout)
        return 0
    if not (args.spec and args.dataset and args.out):
        ap.error("--spec, --dataset and --out are required")

    with open(args.spec) as f:
        spec = json.load(f)
    # imports first, timed on their own: a stage's time is then its work alone
    w, c = time.perf_counter(), time.process_time()
    import numpy as np

    if spec.get("kind", "pipeline") == "torch":
        import torch  # noqa: F401
    else:
        from .pipeline import preload

        preload()
    imported = (time.perf_counter() - w, time.process_time() - c)
    with open(args.dataset) as f:
        data = json.load(f)
    t0 = time.time()
    extra = {}
    if spec.get("kind", "pipeline") == "torch":
        from .torch_mlp import run_torch

        if not args.input:
            ap.error("a torch run needs --input EMBEDDING.npy")
        arrays, timings, extra["torch_run"] = run_torch(
            np.load(args.input), data["labels"], data["n_train"], spec["seeds"],
            device=spec["device"], deterministic=spec["deterministic"], threads=spec["threads"])
    elif spec.get("kind") == "perturb":
        from .pipeline import run_perturbed

        if not args.input:
            ap.error("a perturb run needs --input EMBEDDING.npy")
        arrays, timings = run_perturbed(np.load(args.input), data["labels"], data["n_train"],
                                        spec["seeds"], spec["perturb"])
    else:
        from .pipeline import run_pipeline

        arrays, timings = run_pipeline(
            data["seqs"], data["labels"], data["n_train"], dtype=spec["dtype"],
            svd_iters=spec["svd_iters"], seeds=spec["seeds"],
            embedding=spec.get("embedding", "randomized"))
    stages = {}
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        np.save(os.path.join(args.out, name + ".npy"), a, allow_pickle=False)
        stages[name] = {"sha256": _sha256(a), "dtype": a.dtype.str, "shape": list(a.shape)}
    manifest = {
        "stages": stages,
        "timings": {k: {"wall_s": w, "cpu_s": c}
                    for k, (w, c) in {"import": imported, **timings}.items()},
        "wall_s": time.time() - t0,
        "seeds": spec["seeds"],
        "env": fingerprint(),
        **extra,
    }
    # manifest last: its presence tells the runner that every array before it is complete
    tmp = os.path.join(args.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(args.out, "manifest.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
