"""What a bundle may hold: capped JSON, and every run's spec, manifest, dtypes and shapes checked.

Stages are plain numbers, except a lab pipeline's protein ids where the pipeline's file (carried
or kept here, kit.app.bundle_pipelines) declares them.

The caps a lab can raise (environment variables, in MiB): ``KIT_BUNDLE_MAX_ARRAY_MIB`` (one
stage array, default 256: over 10x the largest stage a 6,000-protein run writes),
``KIT_BUNDLE_MAX_TOTAL_MIB`` (all arrays together, default 16384) and ``KIT_BUNDLE_MAX_JSON_MIB``
(bundle.json, default 32; MANIFEST.json gets a quarter of it). JSON nesting is at most 32 deep.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from ..core.errors import KitError
from ..core.spec import RunSpec
from ..envs.probes import check_carried
from ..runs.store.blobs import blob_key
from ..worker.pipeline import MODELS, fed_stages
from ..worker.kinds import shown
from .bundle_pipelines import SHA256, check_runs, declarations, kind_mismatch, text_problem

FORMAT = "kit-bundle/1"
NPY_HEADER = 4096            # a .npy header is at most this long
MAX_DEPTH = 32               # kit's documents nest about 6 deep
_DTYPE = re.compile(r"^[<>|][fiub][1248]$")  # plain numbers: no objects, records or sub-arrays
_MIB = 2 ** 20
# stages whose numbers analysis combines element by element: one shape per dataset
_SAME_SHAPE = (*MODELS, "torch_mlp", "y_test", "svd_rand", "svd_arpack", "svd_rand.sv",
               "svd_arpack.sv", "kmeans", "kmeans.inertia", "knn")


def cap(name: str, default_mib: int) -> int:
    """A size cap in bytes from the environment variable ``name`` (MiB), else the default."""
    raw = os.environ.get(name)
    if raw is None:
        return default_mib * _MIB
    try:
        value = int(raw)
        assert value > 0
    except (ValueError, AssertionError):
        raise KitError(f"{name}={raw!r} is not a positive whole number of MiB") from None
    return value * _MIB


def max_body() -> int:
    return cap("KIT_BUNDLE_MAX_JSON_MIB", 32)


def max_manifest() -> int:
    return max_body() // 4


def _depth(data: bytes) -> int:
    """The deepest nesting of a JSON text, counted without parsing it (strings skipped)."""
    s = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", data)
    s = s.translate(None, delete=bytes(c for c in range(256) if c not in b"[]{}"))
    deepest, level = 0, 0
    for i in range(0, len(s), _MIB):
        b = np.frombuffer(s[i:i + _MIB], np.uint8)
        steps = np.where((b == ord("[")) | (b == ord("{")), 1, -1).astype(np.int64)
        run = np.cumsum(steps) + level
        deepest, level = max(deepest, int(run.max())), int(run[-1])
    return deepest


def parse_json(data: bytes, name: str, path) -> object:
    """A bounded JSON document: too deep or not JSON is one line naming the member."""
    if _depth(data) > MAX_DEPTH:
        raise KitError(f"{path}: {name} nests deeper than {MAX_DEPTH} levels; not a kit bundle")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise KitError(f"{path}: {name} is not JSON; copy the bundle again") from None


def check_manifest(manifest, path) -> dict:
    """MANIFEST.json: {member: {"sha256": hex, "size": bytes}}, nothing else."""
    ok = isinstance(manifest, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and set(v) == {"sha256", "size"}
        and isinstance(v["sha256"], str) and type(v["size"]) is int and v["size"] >= 0
        for k, v in manifest.items())
    if not ok:
        raise KitError(f"{path}: MANIFEST.json is malformed; not a bundle written by `kit export`")
    return manifest


@dataclass(frozen=True)
class Expected:
    """One array member as its run records it."""
    run: str
    stage: str
    sha256: str
    dtype: str
    shape: tuple
    nbytes: int


def check_document(doc, path) -> dict:
    """bundle.json, with every field import and analysis rely on checked (one line otherwise)."""
    try:
        if doc.get("format") != FORMAT:
            raise KitError(f"{path}: unknown bundle format {shown(doc.get('format'))}")
        assert isinstance(doc["host"]["id"], str) and isinstance(doc["host"]["name"], str)
        assert isinstance(doc["runs"], list) and isinstance(doc["pairs"], list)
        assert isinstance(doc["datasets"], dict) and isinstance(doc["created"], str)
        for r in doc["runs"]:
            assert isinstance(r["id"], str) and isinstance(r["manifest"], dict)
            assert isinstance(r["stages"], dict) and isinstance(r["blobs"], dict)
            assert isinstance(r["created"], str)
            for st, i in r["stages"].items():
                assert isinstance(i["sha256"], str) and isinstance(i["dtype"], str)
                assert isinstance(i["shape"], list)
                assert all(type(x) is int and x >= 0 for x in i["shape"])
                assert isinstance(r["blobs"][st], str)
        for p in doc["pairs"]:
            assert all(isinstance(p[k], str) for k in ("factor", "level", "a", "b", "label"))
        assert isinstance(doc.get("probes", {}), dict)  # older bundles carry no probe locks
    except KitError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, AssertionError):
        raise KitError(f"{path}: bundle.json is malformed") from None
    for r in doc["runs"]:
        _check_run(r, path)
    found = declarations(doc, path)  # the specs checked: each run's pipeline is a hash
    for r in doc["runs"]:
        _check_stages(r, found.get(r["spec"].get("pipeline")), path)
    check_runs(doc, found, path)
    _check_pairs(doc, path)
    doc["_declared"] = found  # what import reads of the files, derived here, never the bundle's
    stacks = {r["spec"]["stack"] for r in doc["runs"]}
    for name, what in doc.get("probes", {}).items():
        try:
            check_carried(name, what)
        except KitError as e:
            raise KitError(f"{path}: {e}") from None
        if name not in stacks:  # a bundle says what its runs' probes are, nothing more
            raise KitError(f"{path}: the bundle's probe stack {name} is no stack of its runs")
    _check_shapes(doc, path)
    return doc


def _check_run(r: dict, path) -> None:
    name = f"{path}: run {r['id'][:12]}"
    try:
        spec = RunSpec.from_json(json.dumps(r["spec"]))
    except (TypeError, ValueError, KeyError) as e:
        raise KitError(f"{name} has a malformed spec ({e})") from e
    if spec.run_id != r["id"]:
        raise KitError(f"{name}'s id does not match its spec")
    if spec.kind == "feed" and set(r["stages"]) != set(fed_stages(spec.feed)):
        raise KitError(f"{name} is a run fed from {spec.feed} on, but its stages are not the ones "
                       f"such a run writes ({', '.join(fed_stages(spec.feed))})")
    why = _manifest_problem(r["manifest"], r["stages"], bool(spec.pipeline))
    if why:
        raise KitError(f"{name}: its manifest {why}; the bundle was not written by `kit export`")


def _check_pairs(doc, path) -> None:
    """A pair is of two of the bundle's runs: export writes no other, and the store would take
    a dangling one for damage of its own."""
    runs = {r["id"] for r in doc["runs"]}
    for p in doc["pairs"]:
        if p["a"] not in runs or p["b"] not in runs:
            raise KitError(f"{path}: pair {p['label'][:40]!r} is not of two of the bundle's "
                           "runs; refusing the bundle")


def _check_stages(r: dict, declared: dict | None, path) -> None:
    """Every stage a plain number type, or (a lab's) fixed-width text; a lab's each what its
    declared kind needs."""
    name = f"{path}: run {r['id'][:12]}"
    lab = bool(r["spec"].get("pipeline"))
    kinds = (declared or {}).get("kinds", {})
    for st, i in r["stages"].items():
        why = None
        if not _DTYPE.match(i["dtype"]) or np.dtype(i["dtype"]).str != i["dtype"]:
            why = text_problem(i["dtype"], lab)
        if why is None and lab:
            why = kind_mismatch(i["dtype"], i["shape"], kinds.get(st, "array"))
        if why:
            raise KitError(f"{name} stage {st[:40]}: dtype {i['dtype'][:20]!r} {why}")
        if not SHA256.match(i["sha256"]) or r["blobs"][st] != blob_key(i["sha256"], i["dtype"],
                                                                        i["shape"]):
            raise KitError(f"{name} stage {st[:40]}: its array's key does not match its hash, dtype "
                           "and shape")


def _manifest_problem(m: dict, stages: dict, lab: bool) -> str | None:
    """Why a run's manifest is not one a worker writes (the fields readers use), or None;
    ``lab``: a lab pipeline's run, whose outputs (run's order) readers iterate over."""
    env = m.get("env")
    if not isinstance(env, dict):
        return "has no environment ('env')"
    if m.get("stages") != stages:
        return "lists other stages than the run"
    outs = m.get("outputs")
    if lab and not (isinstance(outs, list) and all(isinstance(o, str) for o in outs)
                    and len(set(outs)) == len(outs) and set(outs) == set(stages)):
        return "lists other outputs than the run's stages"
    if not all(isinstance(env.get(k, {}), dict) for k in ("packages", "env")) or not all(
            isinstance(p, dict) for p in env.get("threadpools") or []):
        return "has a malformed environment"
    # what the report's environment table and a Python scan read of every run
    if not (isinstance(env.get("python"), str)
            and re.fullmatch(r"\d+\.\d+(\.\d+)?", env["python"], re.A)):
        return "has no Python version like 3.12.1 ('env.python')"
    if not all(isinstance(env.get(k), str) for k in ("machine", "os", "cpu")):
        return "has no machine, os or cpu ('env')"
    wall = m.get("wall_s")
    if type(wall) not in (int, float) or not math.isfinite(wall) or wall < 0 \
            or not isinstance(m.get("timings", {}), dict):  # estimates are made of it
        return "has no wall time"
    if not all(isinstance(t, dict) for t in m.get("timings", {}).values()):
        return "has malformed timings"
    if not isinstance(m.get("torch_run") or {}, dict):
        return "has a malformed torch_run"
    return None


def _check_shapes(doc, path) -> None:
    """Stages analysis combines must agree: within a run (n, n_test, components) and across the
    runs of one dataset (a forged shape would otherwise fail deep in a comparison)."""
    seen = {}
    for r in doc["runs"]:
        if r["spec"].get("pipeline"):
            # a lab's outputs are named by the lab: kit's stage names mean nothing there, and
            # its readers say a shape that differs between two runs rather than combine them
            continue
        sh = {st: tuple(i["shape"]) for st, i in r["stages"].items()}
        name = f"{path}: run {r['id'][:12]}"
        tests = [(m, sh[m]) for m in (*MODELS, "torch_mlp", "y_test") if m in sh]
        if any(len(s) != 1 or s != tests[0][1] for _, s in tests):
            raise KitError(f"{name}: its test-set stages have different shapes "
                           f"({', '.join(f'{m} {list(s)}' for m, s in tests)})")
        rows = {st: s[0] if s else None for st, s in sh.items()
                if st in ("svd_rand", "svd_arpack", "kmeans", "knn")}
        for st in ("svd_rand", "svd_arpack", "knn"):
            if st in sh and len(sh[st]) != 2:
                raise KitError(f"{name} stage {st}: shape {list(sh[st])} is not a matrix")
            if st + ".sv" in sh and st in sh and sh[st + ".sv"] != (sh[st][1],):
                raise KitError(f"{name} stage {st}.sv: shape {list(sh[st + '.sv'])} does not match "
                               f"{st} {list(sh[st])}")
        if len(set(rows.values())) > 1 or ("kmeans.inertia" in sh and sh["kmeans.inertia"] != (1,)):
            raise KitError(f"{name}: its per-protein stages have different shapes "
                           f"({', '.join(f'{s} {list(sh[s])}' for s in rows)})")
        for st in _SAME_SHAPE:
            if st in sh:
                first = seen.setdefault((r["spec"]["dataset"], st), (r["id"], sh[st]))
                if first[1] != sh[st]:
                    raise KitError(f"{name} stage {st}: shape {list(sh[st])}, but run "
                                   f"{first[0][:12]} of the same dataset has {list(first[1])}")


def expected_arrays(doc, path) -> dict:
    """{member name: Expected} of every array the runs refer to, each within the caps."""
    one, total = cap("KIT_BUNDLE_MAX_ARRAY_MIB", 256), cap("KIT_BUNDLE_MAX_TOTAL_MIB", 16384)
    out = {}
    for r in doc["runs"]:
        for stage, i in r["stages"].items():
            nbytes = np.dtype(i["dtype"]).itemsize * int(np.prod(i["shape"], dtype=object))
            if nbytes > one:
                raise KitError(f"{path}: run {r['id'][:12]} stage {stage} declares "
                               f"{nbytes / _MIB:,.0f} MiB, above the {one // _MIB} MiB a stage may "
                               "hold (KIT_BUNDLE_MAX_ARRAY_MIB raises it); refusing the bundle")
            out[f"arrays/{r['blobs'][stage]}.npy"] = Expected(
                r["id"], stage, i["sha256"], i["dtype"], tuple(i["shape"]), nbytes)
    if sum(e.nbytes for e in out.values()) > total:
        raise KitError(f"{path}: its arrays declare more than {total // _MIB} MiB in all "
                       "(KIT_BUNDLE_MAX_TOTAL_MIB raises it); refusing the bundle")
    return out
