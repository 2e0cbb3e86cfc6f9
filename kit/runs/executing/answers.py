"""What cluster workers answer kit, checked before anything of it is used: a run's arrays and
manifest (a worker is a machine kit does not control), and each worker's node and stacks."""

from __future__ import annotations

import re
from pathlib import Path

from ...core.documents import DocumentError, decode_manifest
from ...core.errors import KitError
from ...core.spec import RunSpec
from ...core.waits import bounded
from ...envs.kinds import stack_kind
from ..store.blobs import blob_key
from . import on_node as node
from .runner import RunFailed

_ARRAY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}\.npy")


def unpacked(got, spec: RunSpec, out: Path, held=frozenset()) -> dict:
    """A node's answer: its arrays written into ``out`` and its manifest (verified against them
    by the store), or RunFailed saying what the node said, or that the answer is not a run's:
    a cluster worker is not trusted to send what make_run sends. ``held``: the blob keys the
    task said the store holds; a stage whose array did not come back must be one of them."""
    where = got.get("node") if isinstance(got, dict) else None
    node_name = (
        f"node {where.get('host')} ({where.get('class')})"
        if isinstance(where, dict)
        else "its node"
    )
    if isinstance(got, dict) and isinstance(got.get("error"), str):
        tail = "\n".join(f"    {line}" for line in str(got.get("tail", "")).splitlines()[-5:])
        raise RunFailed(
            f"run {spec.run_id[:12]} failed on {node_name}: {got['error']}"
            + (f"\n  the worker's stderr ended:\n{tail}" if tail else "")
        )
    arrays = got.get("arrays") if isinstance(got, dict) else None
    try:
        manifest = decode_manifest(got.get("manifest") if isinstance(got, dict) else None)
    except DocumentError as e:
        manifest, why = None, str(e)
    else:
        why = "its arrays are not the manifest's .npy files"
    if not (
        manifest
        and manifest["stages"]
        and isinstance(arrays, dict)
        and all(
            isinstance(k, str) and _ARRAY.fullmatch(k) and isinstance(v, bytes)
            for k, v in arrays.items()
        )
        and set(arrays) <= {f"{st}.npy" for st in manifest["stages"]}
        and all(
            blob_key(i["sha256"], i["dtype"], i["shape"]) in held
            for st, i in manifest["stages"].items()
            if f"{st}.npy" not in arrays
        )
    ):
        raise RunFailed(
            f"run {spec.run_id[:12]}: {node_name} answered with something that is "
            f"not a run ({why}); nothing of it was stored"
        )
    for name, data in arrays.items():
        (out / name).write_bytes(data)
    return manifest


def check_rows(executor, stack_names: list) -> list:
    """One row per worker for `kit cluster check`: its node and whether its stacks are the
    driver's (same identity: the same lock, or the same measured versions)."""
    mine = {}
    for name in stack_names:
        try:
            mine[name] = stack_kind(name).runnable().identity
        except KitError:
            pass

    def ask(fn, *a):
        return bounded(
            lambda: executor.client.run(fn, *a), 600, f"the workers of {executor.target}"
        )

    theirs = ask(node.stacks, list(mine))
    pools = ask(node.threadpools)
    rows = []
    for a, f in executor.workers.items():
        has = theirs.get(a, {})
        states = {
            n: (
                "ok"
                if has.get(n, (None,))[0] == ident
                else "missing"
                if has.get(n, (None,))[0] is None
                else "differs"
            )
            for n, ident in mine.items()
        }
        rows.append(
            {
                "worker": f["name"],
                "address": a,
                "host": f["host"],
                "class": f["class"],
                "cores": f["slots"],
                "cpu": f["cpu"],
                "blas": pools.get(a, "no answer"),
                "stacks": states,
            }
        )
    return rows
