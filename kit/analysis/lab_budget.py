"""A lab pipeline's stored pairs compared output by output, each by its kind; the null
experiment names the outputs a loose generator reaches, and each named seed what it reaches."""

from __future__ import annotations

import numpy as np

from ..core import factors
from ..runs.store import Store
from .compare import (adjusted_rand, aligned, embedding_diff, has_arrays, neighbour_jaccard,
                      predictions)
from .digits import agreement
from .lab_pairs import pairs, unfit

# each kept at its largest over a factor's pairs (kit.analysis.tolerances reads them)
MOST = ("max_abs", "max_rel", "flips", "changed", "sign_flips", "nonfinite", "unmeasured",
        "max_dp", "rel")
# each kept at its smallest: the measures where less agreement is the larger difference
LEAST = ("ari", "jaccard", "digits")
# the lesson on seeds, said when two runs with the same named seeds differ
LOOSE = ("a generator is not seeded by the named seeds ({seeds}) (a data loader's workers, an "
         "unseeded default_rng(), numpy's global np.random state, a generator made when the file "
         "is imported, a GPU generator): find it and seed it from a named seed; every "
         "comparison made while it is loose is a single draw")
# said when only the process factor's warm run differs: the module keeps a generator's state
CARRIED = ("state kept at module level carries from one run to the next (a generator made at "
           "import, a cache), as it does in a notebook calling run twice: make it inside run, "
           "from a named seed")


def output_diff(a: np.ndarray, b: np.ndarray, kind: str) -> dict:
    """How far one output differs between two runs, measured as its kind says."""
    if a.shape != b.shape:
        return {"shape": [list(a.shape), list(b.shape)]}
    out = {}
    floating = a.dtype.kind == "f" and b.dtype.kind == "f"
    finite = _finite(a, b) if floating else np.ones(a.shape, bool)
    moved = int(np.sum(~finite & ~((a == b) | (np.isnan(a) & np.isnan(b))))) if floating else 0
    if moved:
        # a NaN or inf on one side only (or two different infs): a changed value that no
        # magnitude measures; every number below is over the elements finite on both sides
        out["nonfinite"] = moved
    if kind == "labels" or kind == "truth":
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
    if floating and "rel" not in out:
        a64, b64 = a.astype(np.float64)[finite], b.astype(np.float64)[finite]
        norm = float(np.linalg.norm(a64))
        out["rel"] = float(np.linalg.norm(a64 - b64) / norm) if norm else float(np.any(a64 != b64))
    elif not floating and "changed" not in out and "jaccard" not in out:
        out["changed"] = int(np.sum(a != b))
    got = agreement(a, b) if floating else None
    if got:
        out.update(digits=got["digits"], bits=got["bits"])
    if a.dtype.kind in "fiu" and b.dtype.kind in "fiu" and kind != "neighbours" and a.size:
        b = aligned(a, b) if kind == "embedding" and floating else b
        out.update(_elementwise(a[finite], b[finite]))
    return out


def _finite(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.isfinite(a) & np.isfinite(b)


def _elementwise(a: np.ndarray, b: np.ndarray) -> dict:
    """The largest |a - b| and the largest |a - b| / |x| over the elements, x each side in turn
    (either run may be the reference a lab's test stores): what rtol/atol must cover."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    d = np.abs(a - b)
    rel = [d[x != 0] / np.abs(x[x != 0]) for x in (a, b)]
    return {"max_abs": float(d.max()) if d.size else 0.0,
            "max_rel": max((float(r.max()) for r in rel if r.size), default=0.0)}


def compare(store: Store, a: str, b: str, kinds: dict) -> dict:
    """{output: {"kind", "identical", ...its measures}} in the order run returned them."""
    ra, rb = store.run(a), store.run(b)
    # every output either run returned: a's order, then those only b returned, in b's order
    order = [n for r in (ra, rb) for n in (r.manifest.get("outputs") or sorted(r.stages))
             if n in r.stages]
    out = {}
    for name in dict.fromkeys(order):
        kind = kinds.get(name, "array")
        sa, sb = ra.stages.get(name), rb.stages.get(name)
        if sa is not None and sb is not None and sa.sha256 == sb.sha256 \
                and sa.dtype == sb.dtype and tuple(sa.shape) == tuple(sb.shape):
            out[name] = {"kind": kind, "identical": True}
            continue
        if sa is None or sb is None:  # returned by one run only
            out[name] = {"kind": kind, "identical": False, "missing": "a" if sa is None else "b"}
            continue
        if not (has_arrays(store, a) and has_arrays(store, b)):
            # a hashes-only bundle's run: its bits differ, by how much is not known here
            out[name] = {"kind": kind, "identical": False, "unmeasured": True}
            continue
        out[name] = {"kind": kind, "identical": False,
                     **output_diff(store.array(a, name), store.array(b, name), kind)}
    return out


def lab_budget(store: Store, info: dict) -> dict:
    """Per factor of pipeline ``info`` (kit.data.pipelines): its pairs, and per output how many
    pairs changed it and the largest difference; ``loose``: the outputs a repeat or process pair
    changed, with the lesson's line; ``inert``: seeds whose own pairs changed no output (a measurement:
    the seed is read but reaches nothing these outputs show, e.g. a convex model's init);
    ``shapes``: each output whose shape a factor changed (its first such pair): no kind
    compares arrays of two shapes, so it is said, never measured; ``not_in_dtype``: floating
    outputs a float32 run of precision returned in another precision."""
    kinds = info.get("kinds", {})
    rows: dict = {}
    shapes: dict = {}
    wide: dict = {}
    for factor, a, b in pairs(store, info["sha256"], info.get("kinds", {})):
        diffs = compare(store, a, b, kinds)
        tally(rows.setdefault(factor, {"pairs": 0, "outputs": {}}), diffs)
        if factor == "precision":  # the float32 run's outputs that run left in float64
            for r in (a, b):
                wide.update(dict.fromkeys(store.run(r).manifest.get("not_in_dtype") or []))
        for name, d in diffs.items():
            if "shape" in d:
                shapes.setdefault((factor, name), {"factor": factor, "output": name,
                                                   "kind": d["kind"], "a": a, "b": b,
                                                   "shapes": d["shape"]})
    # the null experiment: the same spec run twice, or in a fresh and a warm worker (a process
    # factor's difference is a generator's state carried between runs, not the environment)
    rows = {f: rows[f] for f in sorted(rows, key=lambda f: factor_order(f, info["seeds"]))}
    loose = list(dict.fromkeys(n for f in ("repeat", "process")
                               for n, o in rows.get(f, {}).get("outputs", {}).items() if o["changed"]))
    inert = [f.split(":", 1)[1] for f, r in rows.items()
             if f.startswith("seed:") and not any(o["changed"] for o in r["outputs"].values())]
    line = ""
    if loose:
        line = (f"{', '.join(loose)} differ{'s' if len(loose) == 1 else ''} between runs with the "
                f"same named seeds: " + LOOSE.format(seeds=", ".join(info["seeds"]) or "none"))
        carried = [n for n, o in rows.get("process", {}).get("outputs", {}).items()
                   if o["changed"] and not rows.get("repeat", {}).get("outputs", {}).get(
                       n, {}).get("changed")]
        if carried and "repeat" in rows:  # a fresh process draws the same: state carried over
            line += (f"; {', '.join(carried)} differ{'s' if len(carried) == 1 else ''} only in "
                     f"a worker that made a run before: {CARRIED}")
    return {"pipeline": info["sha256"], "name": info["name"], "seeds": list(info["seeds"]),
            "factors": rows, "loose": loose,
            "loose_line": line, "inert": inert, "shapes": list(shapes.values()),
            "not_in_dtype": list(wide),
            # runs whose outputs do not fit the file's KINDS (a bundle's, imported before the
            # file was known here): left out of every pair, each said in one line
            "unfit": list(unfit(store, info["sha256"], kinds).values())}


def lab_pair_details(store: Store, info: dict, factor: str) -> list:
    """The pairs behind one factor's row, each with its label and compare's {output: ...}."""
    found = set(pairs(store, info["sha256"], info.get("kinds", {})))
    # in the order they were planned (seed 0 vs 1, 0 vs 2 ...), not pairs()' sorted run ids
    return [{"factor": p.factor, "a": p.a, "b": p.b,
             "label": p.label or f"{p.a[:12]} vs {p.b[:12]}",
             "outputs": compare(store, p.a, p.b, info.get("kinds", {}))}
            for p in store.pairs(info["sha256"]) if p.factor == factor
            and (p.factor, p.a, p.b) in found]


def tally(row: dict, diffs: dict) -> None:
    """One pair's differences (compare's {output: ...}) into its factor's ``row``: per output
    how many pairs changed it, its worst difference, each MOST measure's largest and each LEAST
    measure's smallest (the worst pair may not hold them all: a row shows these)."""
    row["pairs"] += 1
    for name, d in diffs.items():
        o = row["outputs"].setdefault(name, {"kind": d["kind"], "changed": 0, "worst": None,
                                             "most": {}, "least": {}})
        if not d["identical"]:
            o["changed"] += 1
            o["worst"] = _worse(o["worst"], d)
            for k in MOST:
                if k in d:
                    o["most"][k] = max(o["most"].get(k, d[k]), d[k])
            for k in LEAST:
                if k in d:
                    o["least"][k] = min(o["least"].get(k, d[k]), d[k])


def factor_order(name: str, seeds) -> tuple:
    """Where a pipeline's factor stands among its rows: kit's table order (repeat, process,
    host, threads, ...), each seed:NAME just after seed in the file's SEEDS order."""
    if name.startswith("seed:") and name.split(":", 1)[1] in seeds:
        return factors.order("seed"), 1 + list(seeds).index(name.split(":", 1)[1])
    return factors.order(name), 0


def _worse(a: dict | None, b: dict) -> dict:
    """The larger of two differences of one output: fewer digits kept, else more changed."""
    if a is None:
        return {k: v for k, v in b.items() if k not in ("kind", "identical", "components")}
    # a labels output's ARI before its count of changed labels: k-means may rename every
    # cluster and change nothing (ARI 1), or move a few rows between two (a lower ARI)
    key = lambda d: (d.get("nonfinite", 0), -d.get("digits", 99), d.get("rel", 0),  # noqa: E731
                     d.get("flips", 0), -d.get("ari", 1), d.get("changed", 0),
                     d.get("unmeasured", False))
    return a if key(a) >= key(b) else _worse(None, b)
