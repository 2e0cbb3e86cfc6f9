"""What a bundle's runs must agree on, past its schema: ids, stages, dtypes, shapes and the caps.

bundle.json and MANIFEST.json are decoded by their schema (kit.app.bundle_schema: strict,
bounded, names free of control characters); what is checked here reads those typed records.
Stages are plain numbers, except a lab pipeline's protein ids where the pipeline's file (carried
or kept here, kit.app.bundle_pipelines) declares them.

The caps a lab can raise (environment variables, in MiB; kit.core.caps):
``KIT_BUNDLE_MAX_ARRAY_MIB`` (one stage array, default 256: a run's and an export's cap too),
``KIT_BUNDLE_MAX_TOTAL_MIB`` (all arrays together, default 16384) and ``KIT_BUNDLE_MAX_JSON_MIB``
(bundle.json, default 32; MANIFEST.json gets a quarter of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec

from ..core.caps import MIB as _MIB
from ..core.caps import cap, stage_bytes, stage_too_big
from ..core.documents import DocumentError, run_spec
from ..core.errors import KitError
from ..envs.containers.loaded import is_loaded
from ..envs.kinds.container import split_name
from ..envs.probes import check_carried
from ..runs.store.blobs import blob_key
from ..worker.dtypes import recorded_problem
from ..worker.pipeline import MODELS, fed_stages
from .bundle_pipelines import SHA256, check_runs, declarations, kind_mismatch
from .bundle_schema import FORMAT, Bundle, Run, decode_bundle, decode_members, plain

__all__ = [
    "FORMAT",
    "NPY_HEADER",
    "Expected",
    "cap",
    "check_document",
    "check_manifest",
    "expected_arrays",
    "expected_images",
    "max_body",
    "max_manifest",
]

NPY_HEADER = 4096  # a .npy header is at most this long
# stages whose numbers analysis combines element by element: one shape per dataset
_SAME_SHAPE = (
    *MODELS,
    "torch_mlp",
    "y_test",
    "svd_rand",
    "svd_arpack",
    "svd_rand.sv",
    "svd_arpack.sv",
    "kmeans",
    "kmeans.inertia",
    "knn",
)


def max_body() -> int:
    return cap("KIT_BUNDLE_MAX_JSON_MIB", 32)


def max_manifest() -> int:
    return max_body() // 4


def check_manifest(raw: bytes, path) -> dict:
    """MANIFEST.json: {member: Entry (sha256, size)}, nothing else (kit.app.bundle_schema)."""
    return decode_members(raw, path)


@dataclass(frozen=True)
class Expected:
    """One array member as its run records it."""

    run: str
    stage: str
    sha256: str
    dtype: str
    shape: tuple
    nbytes: int


def check_document(body: bytes, path) -> dict:
    """bundle.json decoded by its schema and its runs checked against each other; returns its
    JSON form (what the store and the readers take, as the text has it) with ``_declared``."""
    bundle = decode_bundle(body, path)
    for r in bundle.runs:
        _check_run(r, path)
    # the dict form of the very bytes the schema passed: the store keeps a spec's text as given
    # (its sha256 is the run's id), which re-encoding the records would change
    doc = plain(body, path)
    found = declarations(doc, path)  # the specs checked: each run's pipeline is a hash
    for r in bundle.runs:
        _check_stages(r, found.get(r.spec.pipeline), path)
    check_runs(doc, found, path)
    _check_pairs(bundle, path)
    doc["_declared"] = found  # what import reads of the files, derived here, never the bundle's
    stacks = {r.spec.stack for r in bundle.runs}
    for name, what in bundle.head.probes.items():
        try:
            check_carried(name, msgspec.to_builtins(what))
        except KitError as e:
            raise KitError(f"{path}: {e}") from None
        if name not in stacks:  # a bundle says what its runs' probes are, nothing more
            raise KitError(f"{path}: the bundle's probe stack {name} is no stack of its runs")
    _check_shapes(bundle, path)
    _check_images(bundle, path)
    return doc


def _check_images(bundle: Bundle, path) -> None:
    """An image a bundle carries is the one its runs of that container stack ran in (each
    run's stack id and manifest name it), on the base the stack's name says."""
    ran: dict = {}
    for r in bundle.runs:
        said = (r.manifest.image or {}).get("id")
        ran.setdefault(r.spec.stack, set()).update({r.spec.stack_id, *([said] if said else [])})
    for name, image in bundle.head.images.items():
        parts = split_name(name)
        if parts is None or name not in ran or is_loaded(parts[1]):
            raise KitError(
                f"{path}: the bundle's image {name[:64]!r} is of no container stack "
                "its runs ran in; refusing the bundle"
            )
        if parts[1] != image.base:
            raise KitError(
                f"{path}: the bundle's image {name} says base {image.base}, its name "
                f"{parts[1]}; refusing the bundle"
            )
        if ran[name] != {image.id}:
            raise KitError(
                f"{path}: the bundle's image {name} is {image.id[7:19]}, but its runs "
                f"ran in {', '.join(sorted(i[7:19] for i in ran[name]))}; refusing "
                "the bundle"
            )


def expected_images(doc: dict) -> dict:
    """{member name: stack} of the image archives the bundle's recipes say it carries."""
    return {
        f"images/{r['id'][7:]}.tar": name
        for name, r in doc.get("images", {}).items()
        if r.get("archive")
    }


def _check_run(r: Run, path) -> None:
    name = f"{path}: run {r.id[:12]}"
    try:
        spec = run_spec(r.spec)
    except DocumentError as e:
        raise KitError(f"{name} has a malformed spec ({e.reason})") from None
    if spec.run_id != r.id:
        raise KitError(f"{name}'s id does not match its spec")
    if spec.kind == "feed" and set(r.stages) != set(fed_stages(spec.feed)):
        raise KitError(
            f"{name} is a run fed from {spec.feed} on, but its stages are not the ones "
            f"such a run writes ({', '.join(fed_stages(spec.feed))})"
        )
    why = _manifest_problem(r, bool(spec.pipeline))
    if why:
        raise KitError(f"{name}: its manifest {why}; the bundle was not written by `kit export`")
    if set(r.blobs) != set(r.stages):
        raise KitError(f"{name}: its blob keys name other stages than its own")


def _check_pairs(bundle: Bundle, path) -> None:
    """A pair is of two of the bundle's runs: export writes no other, and the store would take
    a dangling one for damage of its own."""
    runs = {r.id for r in bundle.runs}
    for p in bundle.head.pairs:
        if p.a not in runs or p.b not in runs:
            raise KitError(
                f"{path}: pair {p.label[:40]!r} is not of two of the bundle's "
                "runs; refusing the bundle"
            )


def _check_stages(r: Run, declared: dict | None, path) -> None:
    """Every stage of a dtype kit stores (plain numbers, or a lab's fixed-width text); a lab's
    each what its declared kind needs."""
    name = f"{path}: run {r.id[:12]}"
    lab = bool(r.spec.pipeline)
    kinds = (declared or {}).get("kinds", {})
    for st, i in r.stages.items():
        why = recorded_problem(i.dtype, text=lab)  # the set kit run stores (kit.worker.dtypes)
        if why is None and lab:
            why = kind_mismatch(i.dtype, i.shape, kinds.get(st, "array"))
        if why:
            raise KitError(f"{name} stage {st[:40]}: dtype {i.dtype[:20]!r} {why}")
        if not SHA256.fullmatch(i.sha256) or r.blobs[st] != blob_key(i.sha256, i.dtype, i.shape):
            raise KitError(
                f"{name} stage {st[:40]}: its array's key does not match its hash, dtype and shape"
            )


def _manifest_problem(r: Run, lab: bool) -> str | None:
    """Why a run's manifest is not the one its worker wrote for these stages, or None (its
    fields' types are the schema's); ``lab``: a lab pipeline's run, whose outputs (the run's
    order) readers iterate over."""
    m = r.manifest
    if m.stages != r.stages:
        return "lists other stages than the run"
    outs = m.outputs
    if lab and not (
        outs is not None and len(set(outs)) == len(outs) and set(outs) == set(r.stages)
    ):
        return "lists other outputs than the run's stages"
    # what the report's environment table and a Python scan read of every run (the schema lets
    # a build suffix through: 3.13.0rc1)
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", m.env.python, re.A):
        return "has no Python version like 3.12.1 ('env.python')"
    if not all(
        t == t and abs(t) != float("inf")
        for t in (m.wall_s, *(x for tm in m.timings.values() for x in (tm.wall_s, tm.cpu_s)))
    ):
        return "has no wall time"  # estimates are made of it
    return None


def _check_shapes(bundle: Bundle, path) -> None:
    """Stages analysis combines must agree: within a run (n, n_test, components) and across the
    runs of one dataset (a forged shape would otherwise fail deep in a comparison)."""
    seen: dict = {}
    for r in bundle.runs:
        if r.spec.pipeline:
            # a lab's outputs are named by the lab: kit's stage names mean nothing there, and
            # its readers say a shape that differs between two runs rather than combine them
            continue
        sh = {st: tuple(i.shape) for st, i in r.stages.items()}
        name = f"{path}: run {r.id[:12]}"
        tests = [(m, sh[m]) for m in (*MODELS, "torch_mlp", "y_test") if m in sh]
        if any(len(s) != 1 or s != tests[0][1] for _, s in tests):
            raise KitError(
                f"{name}: its test-set stages have different shapes "
                f"({', '.join(f'{m} {list(s)}' for m, s in tests)})"
            )
        rows = {
            st: s[0] if s else None
            for st, s in sh.items()
            if st in ("svd_rand", "svd_arpack", "kmeans", "knn")
        }
        for st in ("svd_rand", "svd_arpack", "knn"):
            if st in sh and len(sh[st]) != 2:
                raise KitError(f"{name} stage {st}: shape {list(sh[st])} is not a matrix")
            if st + ".sv" in sh and st in sh and sh[st + ".sv"] != (sh[st][1],):
                raise KitError(
                    f"{name} stage {st}.sv: shape {list(sh[st + '.sv'])} does not match "
                    f"{st} {list(sh[st])}"
                )
        if len(set(rows.values())) > 1 or ("kmeans.inertia" in sh and sh["kmeans.inertia"] != (1,)):
            raise KitError(
                f"{name}: its per-protein stages have different shapes "
                f"({', '.join(f'{s} {list(sh[s])}' for s in rows)})"
            )
        for st in _SAME_SHAPE:
            if st in sh:
                first = seen.setdefault((r.spec.dataset, st), (r.id, sh[st]))
                if first[1] != sh[st]:
                    raise KitError(
                        f"{name} stage {st}: shape {list(sh[st])}, but run "
                        f"{first[0][:12]} of the same dataset has {list(first[1])}"
                    )


def expected_arrays(doc, path) -> dict:
    """{member name: Expected} of every array the runs refer to, each within the caps."""
    total = cap("KIT_BUNDLE_MAX_TOTAL_MIB", 16384)
    out = {}
    for r in doc["runs"]:
        for stage, i in r["stages"].items():
            nbytes = stage_bytes(i["dtype"], i["shape"])
            why = stage_too_big(nbytes, "declares")
            if why:
                raise KitError(
                    f"{path}: run {r['id'][:12]} stage {stage} {why}; refusing the bundle"
                )
            out[f"arrays/{r['blobs'][stage]}.npy"] = Expected(
                r["id"], stage, i["sha256"], i["dtype"], tuple(i["shape"]), nbytes
            )
    if sum(e.nbytes for e in out.values()) > total:
        raise KitError(
            f"{path}: its arrays declare more than {total // _MIB} MiB in all "
            "(KIT_BUNDLE_MAX_TOTAL_MIB raises it); refusing the bundle"
        )
    return out
