"""What runs on a cluster node, inside a Dask worker: its facts, and one run made there.

The driver (`kit run`) is the only writer of the store: a node makes the run in a folder of its
own and hands back the manifest and the arrays' bytes, which the driver verifies and stores.
Nothing here raises for an ordinary failure: the answer says what failed on which node, so the
driver can report it, while a node that dies mid-run is Dask's to retry.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import tempfile
from pathlib import Path
from typing import cast

from ...core.errors import KitError
from ...core.processes import alive, cores
from ...core.spec import RunSpec
from ...data.dataset import Dataset, dataset_path, stored_worker_file, verify_worker_file
from ...data.pipelines import keep_shipped, pipeline_file, present, read_pipeline
from ...envs.catalogue import HOST
from ...envs.derived import base_of, definition, lock_named
from ...envs.kinds import stack_kind
from ...envs.launch import fingerprint as interpreter_fingerprint
from ...envs.platforms import detect
from ...worker import fingerprint
from ..store.blobs import blob_key, file_problem
from .attempt import WorkerFailed, attempt
from .warm import WarmPool

CLASS_VAR = "KIT_NODE_CLASS"  # a lab's name for a node type, set in the worker's environment


def cpu_model() -> str:
    return fingerprint.cpu_model() or platform.processor() or "unknown"


def node_class(cpu: str | None = None) -> str:
    """The node type a run is made on: KIT_NODE_CLASS, else named by the hardware itself.

    Nodes of one type make the same run (one run id, any of them may make it); nodes of
    different types make different runs, which the `host` factor pairs."""
    named = os.environ.get(CLASS_VAR, "").strip()
    if named:
        return named
    what = f"{platform.system()}|{platform.machine()}|{cpu or cpu_model()}"
    return "node-" + hashlib.sha256(what.encode()).hexdigest()[:8]


def facts() -> dict:
    """This node as the driver sees it in `kit cluster check` and in each run's manifest."""
    cpu = cpu_model()
    return {
        "host": socket.gethostname(),
        "class": node_class(cpu),
        "cpu": cpu,
        "machine": platform.machine(),
        "system": platform.system(),
        "cores": cores(),
        "kit_home": os.environ.get("KIT_HOME", ""),
    }


def stacks(names: list) -> dict:
    """{stack: (identity or None, why not)} of the named stacks as this node has them."""
    out: dict[str, tuple[str | None, str]] = {}
    for name in names:
        try:
            out[name] = (stack_kind(name).runnable().identity, "")
        except KitError as e:
            out[name] = (None, str(e))
    return out


def _derived_here(spec: RunSpec, where: str, path) -> None:
    """A lab file's derived stack (its base stack plus its REQUIRES) locked on a node whose
    KIT_HOME has not got it (node-local disks): from the file's own REQUIRES, as the driver
    locked it; the identity check that follows says if the lock came out otherwise."""
    if not (spec.pipeline and base_of(spec.stack)) or definition(spec.stack) is not None:
        return
    why = lock_named(spec.stack, read_pipeline(path)[0]["requires"], detect())
    if why:
        raise KitError(f"node {where}: derived stack {spec.stack} cannot be locked here: {why}")


def _stack(spec: RunSpec, where: str):
    """The run's stack on this node: built from its lock file if missing (under a lock, so two
    workers sharing a KIT_HOME build it once), refused if it is not what the plan measured."""
    kind = stack_kind(spec.stack)
    try:
        stack = kind.runnable()
    except KitError:
        if not kind.buildable:
            raise
        kind.build(detect())
        stack = kind.runnable()
    if stack.identity != spec.stack_id:
        raise KitError(
            f"node {where}: stack {spec.stack!r} here is {stack.identity[:12]}, the "
            f"plan measured {spec.stack_id[:12]}; rebuild it on that node with `kit stacks "
            f"build {spec.stack}` (or plan again from a driver with the same stack)"
        )
    return stack


_PREFIX = "kit-run-"
_swept: list = []
# this Dask worker's warm workers, as on the local path: a process per (stack, threads, env)
# that makes run after run; they die with the Dask worker (they watch its pid). Dask's task
# threads live as long as the worker, so no warm process loses the thread that started it.
_warm = WarmPool()


def sweep() -> None:
    """Remove this node's run folders left by Dask workers that were killed (once per worker:
    as it starts, through the preload, else before its first run)."""
    if _swept:
        return

    _swept.append(True)
    for d in Path(tempfile.gettempdir()).glob(_PREFIX + "*"):
        pid = d.name[len(_PREFIX) :].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _undo_nanny_environment() -> None:
    """Drop what Dask's nanny set for its own worker process before starting it (a 64 KiB
    MALLOC_TRIM_THRESHOLD_, one BLAS thread), so a run's process starts with the environment it
    would have outside Dask (bench/cluster.py measured runs ~20% slower with them kept)."""
    import dask

    for key in dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {}):
        os.environ.pop(key, None)


def _sent(out: Path, manifest: dict, held) -> dict:
    """{file name: bytes} of the run's arrays the driver's store lacks: an array whose blob key
    is among ``held`` stays here, once its file is checked against its manifest entry (a file
    that is not what the manifest says goes back, for the driver to refuse as it would)."""
    sent = {}
    for f in out.iterdir():
        if f.suffix != ".npy":
            continue
        info = manifest["stages"].get(f.stem) if held else None
        if (
            info
            and blob_key(info["sha256"], info["dtype"], info["shape"]) in held
            and file_problem(f, info["sha256"], info["dtype"], info["shape"]) is None
        ):
            continue
        sent[f.name] = f.read_bytes()
    return sent


def make_run(
    spec_json: str, dataset: Dataset | dict | None, input_npy: bytes | None, held=()
) -> dict:
    """A Dask task: make one run on this node; {"manifest", "arrays", "node"}, {"error", ...},
    or {"missing": "dataset"} ("pipeline") when sent without the dataset (a lab pipeline's
    file: kit.data.pipelines.shipment) and this node has not got it. ``held``: blob keys of
    arrays the driver's store holds, which need not come back (kit.runs.store.moving)."""
    sweep()
    _undo_nanny_environment()
    me = facts()
    where = me["host"]
    try:
        spec = RunSpec.from_json(spec_json)
        if not spec.pipeline:
            stack = _stack(spec, where)
        if spec.pipeline:  # a lab's file travels once per node too, verified before it is kept
            if dataset is None and not present(spec.pipeline):
                return {"missing": "pipeline", "node": me}
            if dataset is not None:
                try:
                    keep_shipped(spec.pipeline, dataset)
                except KitError as e:
                    raise KitError(f"node {where}: {e}") from None
            path = pipeline_file(spec.pipeline)
            _derived_here(spec, where, path)  # its REQUIRES read from the file just kept
            stack = _stack(spec, where)
        elif dataset is None:  # the dataset travels once per node, by content
            stored = stored_worker_file(spec.dataset)
            if stored is None:
                return {"missing": "dataset", "node": me}
            path = stored
        else:  # a kit dataset's run is sent its Dataset (a dict is a lab file's shipment)
            path = dataset_path(cast(Dataset, dataset))
            why = verify_worker_file(path)
            if why:
                raise KitError(f"node {where}: the dataset arrived damaged ({why})")
        # node-local temporary space: a shared KIT_HOME/tmp would be swept by other nodes;
        # one folder per Dask worker holds its runs' (a container worker's writable mount)
        runs = Path(tempfile.gettempdir()) / f"{_PREFIX}{os.getpid()}-runs"
        runs.mkdir(mode=0o700, exist_ok=True)
        _warm.root = runs
        with tempfile.TemporaryDirectory(dir=runs, prefix=f"{spec.run_id[:12]}-") as tmp:
            manifest = attempt(spec, stack, path, Path(tmp), input_npy, _warm)
            arrays = _sent(Path(tmp) / "out", manifest, frozenset(held))
        manifest["node"] = me
        return {"manifest": manifest, "arrays": arrays, "node": me}
    except WorkerFailed as e:
        return {"error": str(e), "tail": e.tail, "node": me}
    except KitError as e:
        return {"error": str(e), "tail": "", "node": me}
    except OSError as e:  # the node's disk or temporary space: its failure, said as one
        return {"error": f"node {where}: {e}", "tail": "", "node": me}


def threadpools():
    """The BLAS/OpenMP pools of kit's own interpreter on this node (its worker's fingerprint),
    or why they could not be read."""
    try:
        fp = interpreter_fingerprint(stack_kind(HOST).runnable().command)
        return {"threadpools": fp.get("threadpools"), "blas_build": fp.get("blas_build")}
    except Exception as e:  # noqa: BLE001 - a node that cannot start the worker says so in its row
        return f"cannot start the worker: {e}"
