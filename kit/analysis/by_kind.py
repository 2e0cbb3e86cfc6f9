"""The per-output-kind comparison engine: two runs' outputs compared each as its declared kind
says (kit's own pipeline declares its kinds as a lab's file does), and a factor's pairs tallied."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..core.subject import Subject
from ..runs.store import Store
from ..worker.kinds import kind_problem
from .compare import (
    adjusted_rand,
    aligned,
    embedding_diff,
    has_arrays,
    neighbour_jaccard,
    predictions,
)
from .digits import agreement

# each kept at its largest over a factor's pairs (kit.analysis.tolerances reads them)
MOST = (
    "max_abs",
    "max_rel",
    "flips",
    "changed",
    "sign_flips",
    "nonfinite",
    "unmeasured",
    "max_dp",
    "rel",
)
# each kept at its smallest: the measures where less agreement is the larger difference
LEAST = ("ari", "jaccard", "digits", "digits_worst")
# the most clusters matched before comparing centroids (the assignment is k x k memory and
# k^3 time): a bundle's "centroids" of a million rows is compared by position instead
MAX_MATCHED = 2000


def output_diff(a: np.ndarray, b: np.ndarray, kind: str) -> dict[str, Any]:
    """How far one output differs between two runs, measured as its kind says."""
    if a.shape != b.shape:
        return {"shape": [list(a.shape), list(b.shape)]}
    out: dict[str, Any] = {}
    floating = a.dtype.kind == "f" and b.dtype.kind == "f"
    finite = _finite(a, b) if floating else np.ones(a.shape, bool)
    moved = int(np.sum(~finite & ~((a == b) | (np.isnan(a) & np.isnan(b))))) if floating else 0
    if moved:
        # a NaN or inf on one side only (or two different infs): a changed value that no
        # magnitude measures; every number below is over the elements finite on both sides
        out["nonfinite"] = moved
    if kind == "centroids" and floating and a.ndim == 2 and finite.all() and len(a) <= MAX_MATCHED:
        # k-means numbers its clusters arbitrarily: b's rows matched to a's nearest first
        order = matched_rows(a, b)
        out["relabelled"] = bool(np.any(order != np.arange(len(order))))
        b = b[order]
    if kind == "labels" or kind == "truth" or kind == "classes":
        out["changed"] = int(np.sum(a != b))
        if kind == "labels":
            out["ari"] = adjusted_rand(a, b)
    elif kind == "neighbours":
        out["jaccard"] = neighbour_jaccard(a, b)
    elif kind == "probabilities" and floating:
        # rows whose predicted class changed (kit's models' threshold; argmax of n x k classes)
        out["flips"] = int(np.sum(predictions(a) != predictions(b))) if a.size else 0
        dp = np.abs(a.astype(np.float64) - b)[finite]
        out["max_dp"] = float(dp.max()) if dp.size else 0.0
    elif kind == "embedding" and floating and a.ndim == 2 and a.size and finite.all():
        e = embedding_diff(a, b)
        out.update(rel=e["rel_fro"], sign_flips=e["sign_flips"], components=e["components"])
    if kind == "metrics" and floating and a.size:
        # each metric on its own scale: the worst element's relative change, not one norm
        # over all (inertia beside a silhouette would hide the silhouette's 5%)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(a64 != 0, np.abs(a64 - b64) / np.abs(a64), (a64 != b64) * 1.0)
        per = np.where(finite, per, 0.0)
        out["rel"], out["worst_metric"] = float(per.max()), int(np.argmax(per))
    if floating and "rel" not in out:
        a64, b64 = a.astype(np.float64)[finite], b.astype(np.float64)[finite]
        norm = float(np.linalg.norm(a64))
        out["rel"] = float(np.linalg.norm(a64 - b64) / norm) if norm else float(np.any(a64 != b64))
    elif not floating and "changed" not in out and "jaccard" not in out:
        out["changed"] = int(np.sum(a != b))
    # an embedding's digits after its columns' signs are aligned, as its rel is: a flipped
    # sign is the SVD's choice, not a lost digit
    signed = kind == "embedding" and floating and a.ndim == 2 and a.size and finite.all()
    got = agreement(a, aligned(a, b) if signed else b) if floating else None
    if got:
        # digits is the median element's, digits_worst the worst element's: both, named so
        out.update(digits=got["digits"], bits=got["bits"], digits_worst=got["digits_min"])
    if a.dtype.kind in "fiu" and b.dtype.kind in "fiu" and kind != "neighbours" and a.size:
        b = aligned(a, b) if kind == "embedding" and floating else b
        out.update(_elementwise(a[finite], b[finite]))
    return out


def matched_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The order of ``b``'s rows that puts each nearest to its own row of ``a`` (the assignment
    of least total squared distance: scipy's linear_sum_assignment)."""
    from scipy.optimize import linear_sum_assignment

    cost = ((a[:, None, :].astype(np.float64) - b[None, :, :]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    order: np.ndarray = cols[np.argsort(rows)]
    return order


def _finite(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.isfinite(a) & np.isfinite(b)


def _elementwise(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """The largest |a - b| and the largest |a - b| / |x| over the elements, x each side in turn
    (either run may be the reference a lab's test stores): what rtol/atol must cover."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    d = np.abs(a - b)
    rel = [d[x != 0] / np.abs(x[x != 0]) for x in (a, b)]
    return {
        "max_abs": float(d.max()) if d.size else 0.0,
        "max_rel": max((float(r.max()) for r in rel if r.size), default=0.0),
    }


def compare(
    store: Store,
    a: str,
    b: str,
    kinds: Mapping[str, str],
    outputs: Sequence[str] | None = None,
    measure: bool = True,
) -> dict[str, dict[str, Any]]:
    """{output: {"kind", "identical", ...its measures}}, each output measured as ``kinds`` (the
    subject's declared kinds) says: every output either run returned, in the order run returned
    them; ``outputs``: only these, in this order, of those both runs hold (kit's own stored
    arrays); ``measure``: False, whether each is identical and nothing more (no array read)."""
    ra, rb = store.run(a), store.run(b)
    names: Iterable[str]
    if outputs is None:
        # every output either run returned: a's order, then those only b returned, in b's order
        names = dict.fromkeys(
            n
            for r in (ra, rb)
            for n in (r.manifest.get("outputs") or sorted(r.stages))
            if n in r.stages
        )
    else:
        names = [n for n in outputs if n in ra.stages and n in rb.stages]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        kind = kinds.get(name, "array")
        sa, sb = ra.stages.get(name), rb.stages.get(name)
        if (
            sa is not None
            and sb is not None
            and sa.sha256 == sb.sha256
            and sa.dtype == sb.dtype
            and tuple(sa.shape) == tuple(sb.shape)
        ):
            out[name] = {"kind": kind, "identical": True}
            continue
        if sa is None or sb is None:  # returned by one run only
            out[name] = {"kind": kind, "identical": False, "missing": "a" if sa is None else "b"}
            continue
        if not measure:
            out[name] = {"kind": kind, "identical": False}
            continue
        if not (has_arrays(store, a) and has_arrays(store, b)):
            # a hashes-only bundle's run: its bits differ, by how much is not known here
            out[name] = {"kind": kind, "identical": False, "unmeasured": True}
            continue
        out[name] = {
            "kind": kind,
            "identical": False,
            **output_diff(store.array(a, name), store.array(b, name), kind),
        }
    return out


def tally(row: dict[str, Any], diffs: dict[str, dict[str, Any]]) -> None:
    """One pair's differences (compare's {output: ...}) into its factor's ``row``: per output
    how many pairs changed it, its worst difference, each MOST measure's largest and each LEAST
    measure's smallest (the worst pair may not hold them all: a row shows these)."""
    row["pairs"] += 1
    for name, d in diffs.items():
        o = row["outputs"].setdefault(
            name, {"kind": d["kind"], "changed": 0, "worst": None, "most": {}, "least": {}}
        )
        if not d["identical"]:
            o["changed"] += 1
            o["worst"] = _worse(o["worst"], d)
            for k in MOST:
                if k in d:
                    o["most"][k] = max(o["most"].get(k, d[k]), d[k])
            for k in LEAST:
                if k in d:
                    o["least"][k] = min(o["least"].get(k, d[k]), d[k])


def _worse(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """The larger of two differences of one output: fewer digits kept, else more changed."""
    if a is None:
        return {k: v for k, v in b.items() if k not in ("kind", "identical", "components")}

    # a labels output's ARI before its count of changed labels: k-means may rename every
    # cluster and change nothing (ARI 1), or move a few rows between two (a lower ARI)
    def key(d: dict[str, Any]) -> tuple[Any, ...]:
        return (
            d.get("nonfinite", 0),
            -d.get("digits", 99),
            d.get("rel", 0),
            d.get("flips", 0),
            -d.get("ari", 1),
            d.get("changed", 0),
            d.get("unmeasured", False),
        )

    return a if key(a) >= key(b) else _worse(None, b)


def unfit(store: Store, subject: Subject) -> dict[str, str]:
    """{run: one line} of the pipeline's runs whose outputs do not fit what its file's KINDS
    declare: a bundle's runs imported before the file was known here were never checked
    against it, and a reader comparing them by kind would fail on a forged shape."""
    out = {}
    pipeline = subject.sha256
    for run_id, spec in store.specs(pipeline).items():
        if spec.pipeline != pipeline:
            continue
        for name, st in store.run(run_id).stages.items():
            why = kind_problem(subject.kind_of(name), len(st.shape), np.dtype(st.dtype).kind)
            if why:
                out[run_id] = (
                    f"run {run_id[:12]}: its output {name[:40]!r} is declared "
                    f"{subject.kind_of(name)} by the pipeline's file, which must "
                    f"be {why}"
                )
                break
    return out


def pairs(store: Store, subject: Subject, fit: bool = True) -> list[tuple[str, str, str]]:
    """The stored pairs of pipeline ``subject``: (factor, run a, run b), sorted. A pair is what
    was planned (kit.runs.planning.plan, recorded by kit.app.audit.run_pairs) or what `kit compare`
    paired (a collaborator's run and its rerun here: host), never guessed again from the specs:
    two runs that happen to differ in one field were not necessarily planned as a pair (a
    seed:a pair at seeds 5 and 6 is not a `seed` pair against the run at 0). ``fit``: the pairs
    of runs unfit for the file's KINDS left out."""
    pipeline = subject.sha256
    specs = store.specs(pipeline)
    bad = unfit(store, subject) if fit else {}
    # both runs this pipeline's (a bundle's pairs table is the collaborator's: checked anyway)
    return sorted(
        {
            (p.factor, p.a, p.b)
            for p in store.pairs(pipeline)
            if all(
                r in specs and specs[r].pipeline == pipeline and r not in bad for r in (p.a, p.b)
            )
        }
    )
