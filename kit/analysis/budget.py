"""The budget: one row per factor, every effect also in units of what a seed changes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import factors
from ..core.subject import Subject
from ..runs.store import Store
from ..runs.store.records import StoredPair
from . import splits
from .amplify import explain
from .by_kind import compare as compare_outputs
from .by_kind import pairs, tally, unfit
from .compare import ALL_MODELS, STAGES, compare_runs, has_arrays
from .records import BudgetRow, Comparison, EmbeddingDiff, ModelBudget
from .verdicts import changed, has_verdicts, run_verdicts

YARDSTICK = ("seed", "")  # (factor, level) whose pairs define one "seed unit"
TORCH_YARDSTICK = ("torch-seed", "")  # the same for the torch MLP
# the lesson on seeds, said when two runs with the same named seeds differ
LOOSE = (
    "a generator is not seeded by the named seeds ({seeds}) (a data loader's workers, an "
    "unseeded default_rng(), numpy's global np.random state, a generator made when the file "
    "is imported, a GPU generator): find it and seed it from a named seed; every "
    "comparison made while it is loose is a single draw"
)
# said when only the process factor's warm run differs: the module keeps a generator's state
CARRIED = (
    "state kept at module level carries from one run to the next (a generator made at "
    "import, a cache), as it does in a notebook calling run twice: make it inside run, "
    "from a named seed"
)

confounds = factors.confounds  # re-exported: the budget is where confounds are read


def _median(xs: Sequence[float]) -> float | None:
    return float(np.median(xs)) if len(xs) else None


def ratio(x: float | None, unit: float | None) -> float | None:
    """``x`` in units of ``unit`` (None without a unit: no seed pair measured it)."""
    return None if x is None or not unit else x / unit


def _models(comps: list[Comparison]) -> list[str]:
    return [m for m in ALL_MODELS if any(m in c.models for c in comps)]


def _yardstick(comps: list[Comparison]) -> dict[str, Any] | None:
    """One seed unit per measure: medians over the seed pairs (torch-seed for the torch MLP);
    pairs known by their digests alone (a hash-only bundle's) measure nothing."""
    comps = [c for c in comps if not c.digests_only]
    if not comps:
        return None
    pipe = [c for c in comps if c.svd_rand is not None]
    acc: dict[str, list[float]] = {}
    for m in _models(comps):
        cs = [c.models[m] for c in comps if m in c.models]
        acc[m] = [cs[0].acc_a] + [c.acc_b for c in cs]  # the reference, then each seed
    return {
        "pairs": len(pipe),
        "torch_pairs": len(comps) - len(pipe),
        "emb_rel": _median([c.svd_rand.rel_fro for c in pipe if c.svd_rand is not None]),
        "flips": {
            m: _median([c.models[m].flips for c in comps if m in c.models]) for m in _models(comps)
        },
        "acc_sd": {m: float(np.std(v, ddof=1)) if len(v) > 1 else None for m, v in acc.items()},
        # models that predicted one class in a seed run: their seed unit means nothing
        "one_class": [
            m
            for m in _models(comps)
            if any(
                c.models[m].one_class_a or c.models[m].one_class_b for c in comps if m in c.models
            )
        ],
    }


def _agg(
    comps: list[Comparison],
    fn: Callable[[list[Any]], Any],
    get: Callable[[Comparison], Any],
) -> Any:
    """fn over the pairs that have the measure: ``get`` gives None for a pair without it (a
    perturbed run has no k-means, a torch run no embedding); a misspelt one fails at once."""
    vals = [v for v in map(get, comps) if v is not None]
    return fn(vals) if vals else None


def _of(emb: EmbeddingDiff | None, measure: str) -> Any:
    """A measure of an embedding's comparison (a misspelt one is an AttributeError), or None
    for a pair without that embedding (torch runs have none, perturbed ones no ARPACK)."""
    return None if emb is None else getattr(emb, measure)


def _digits(comps: list[Comparison]) -> dict[str, float]:
    """{stage: the fewest significant digits any pair kept there (each pair: its median)}."""
    out: dict[str, float] = {}
    for c in comps:
        for stage, d in c.digits.items():
            out[stage] = min(out.get(stage, d["digits"]), d["digits"])
    return out


def _per_component(comps: list[Comparison], measure: str) -> list[float] | None:
    """The median over the pairs of each SVD component's (or singular value's) difference."""
    lists = [getattr(c.used, measure) for c in comps if c.used]
    lists = [x for x in lists if x]
    if not lists or len({len(x) for x in lists}) != 1:
        return None
    return [float(v) for v in np.median(np.array(lists), axis=0)]


def _row(
    factor: str,
    level: str,
    comps: list[Comparison],
    labels: list[str],
    unit: dict[str, Any] | None,
    vchanges: list[list[str]],
    pair_ids: list[tuple[str, str]],
) -> BudgetRow:
    n = len(comps)
    pipeline = any(c.svd_rand is not None for c in comps)
    stages = [s for s in STAGES if any(s in c.identical for c in comps)]
    identical = {s: sum(bool(c.identical.get(s)) for c in comps) for s in stages}
    emb = _agg(comps, max, lambda c: _of(c.used, "rel_fro"))
    digits = _digits(comps)
    models: dict[str, ModelBudget] = {}
    for m in _models(comps):
        # the pairs that measured it (a pair known by its digests alone measured no model)
        have = [(c, ids) for c, ids in zip(comps, pair_ids, strict=True) if m in c.models]
        flips = [c.models[m].flips for c, _ in have]
        one_class = {
            r
            for c, (a, b) in have
            for r, flag in ((a, c.models[m].one_class_a), (b, c.models[m].one_class_b))
            if flag
        }
        med = _median(flips)
        per_seed = unit["flips"].get(m) if unit else None
        models[m] = ModelBudget(
            flips_median=med,
            flips_max=int(max(flips)),
            max_dp=max(c.models[m].max_dp for c, _ in have),
            max_abs_d_acc=max(abs(c.models[m].d_acc) for c, _ in have),
            flips_median_seed_units=ratio(med, per_seed),
            flips_max_seed_units=ratio(max(flips), per_seed),
            one_class_runs=len(one_class),
        )
    # verdicts are recomputed from the arrays: a pair without them has none to count
    vchanges = [v for c, v in zip(comps, vchanges, strict=True) if not c.digests_only]
    conf: defaultdict[str, set[str]] = defaultdict(set)
    for c in comps:
        for k, (va, vb) in confounds(factor, c.env_diff).items():
            conf[k].add(f"{va} -> {vb}")
    return BudgetRow(
        factor=factor,
        level=level,
        pairs=n,
        labels=labels,
        n_test=comps[0].n_test,
        stages=stages,
        identical=identical,
        all_identical=sum(all(c.identical.values()) for c in comps),
        emb_rel_max=emb,
        emb_rel_median=_agg(comps, _median, lambda c: _of(c.used, "rel_fro")),
        emb_rel_seed_units=ratio(emb, unit["emb_rel"] if unit else None),
        arpack_rel_max=_agg(comps, max, lambda c: _of(c.svd_arpack, "rel_fro")),
        runs=list(dict.fromkeys(r for p in pair_ids for r in p)),
        sv_rel_max=_agg(comps, max, lambda c: _of(c.used, "sv_rel_max")),
        digits_min=digits,
        emb_digits_min=digits.get(comps[0].embedding),
        components_median=_per_component(comps, "components"),
        values_median=_per_component(comps, "values"),
        sign_flips_max=_agg(comps, max, lambda c: _of(c.used, "sign_flips")),
        kmeans_ari_min=_agg(comps, min, lambda c: c.kmeans_ari),
        kmeans_ari_median=_agg(comps, _median, lambda c: c.kmeans_ari),
        knn_jaccard_min=_agg(comps, min, lambda c: c.knn_jaccard),
        knn_jaccard_median=_agg(comps, _median, lambda c: c.knn_jaccard),
        models=models,
        # torch runs have no verdicts of the four classifiers: None, not 0
        verdicts_changed_max=max(len(v) for v in vchanges) if pipeline and vchanges else None,
        verdict_changes={
            k: sum(k in v for v in vchanges) for k in sorted({k for v in vchanges for k in v})
        },
        confounds={k: sorted(v) for k, v in sorted(conf.items())},
    )


def _verdict_changes(store: Store, a: str, b: str) -> list[str]:
    """Verdicts that differ between two pipeline runs (torch runs have none, and runs whose
    arrays are not here none that can be recomputed)."""
    if not all(has_verdicts(store.run(r).spec) and has_arrays(store, r) for r in (a, b)):
        return []
    return changed(run_verdicts(store, a), run_verdicts(store, b))


def budget(store: Store, dataset: str, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Budget rows for every factor with stored pairs on one dataset (by sha256).

    ``summary`` describes a dataset the store has not seen yet (no runs on it).
    """
    groups: defaultdict[tuple[str, str], list[StoredPair]] = defaultdict(list)
    for p in store.pairs(dataset):
        groups[(p.factor, p.level)].append(p)
    comps = {key: [compare_runs(store, p.a, p.b) for p in ps] for key, ps in groups.items()}
    # a factor that changes what is measured compares no verdicts pair by pair (kit.analysis.splits)
    vchanges = {
        key: [] if factors.measures(key[0]) else [_verdict_changes(store, p.a, p.b) for p in ps]
        for key, ps in groups.items()
    }
    unit = _yardstick(comps.get(YARDSTICK, []) + comps.get(TORCH_YARDSTICK, []))
    seed_runs = list(dict.fromkeys(r for p in groups.get(YARDSTICK, []) for r in (p.a, p.b)))
    rows = [
        splits.row(store, f, lvl, groups[(f, lvl)], comps[(f, lvl)][0].n_test, seed_runs)
        if factors.measures(f)
        else _row(
            f,
            lvl,
            comps[(f, lvl)],
            [p.label for p in groups[(f, lvl)]],
            unit,
            vchanges[(f, lvl)],
            [(p.a, p.b) for p in groups[(f, lvl)]],
        )
        for (f, lvl) in sorted(groups, key=_order)
    ]
    seeds = comps.get(YARDSTICK, []) + comps.get(TORCH_YARDSTICK, [])
    note = (
        None
        if unit
        else "the seed pairs' runs were imported without their arrays, so no seed units: "
        "export them with `kit export --arrays`"
        if seeds
        else "no seed runs on this dataset, so no seed units: "
        "run `kit run --factor seed` with the same dataset"
    )
    out: dict[str, Any] = {
        "dataset": store.datasets().get(dataset) or summary or {"sha256": dataset},
        "yardstick": unit,
        "rows": rows,
        "note": note,
        "amplification": explain(rows),
    }
    # a stored homology clustering adds the cluster bootstrap and leakage; without one the
    # budget is exactly what it was (no key)
    from .homology import for_dataset

    h = for_dataset(store, dataset)
    if h is not None:
        out["homology"] = h
    return out


def _order(key: tuple[str, str]) -> tuple[int, str, float, str]:
    factor, level = key
    rank = factors.order(factor)
    try:
        num = float(level)  # svd-iters and perturb levels in numeric order
    except ValueError:
        num = float("inf") if level else 0.0
    return (rank, factor, num, level)


def pair_details(store: Store, dataset: str, factor: str | None = None) -> list[dict[str, Any]]:
    """Every stored pair (optionally of one factor) with its comparison and confounds."""
    out = []
    for p in store.pairs(dataset):
        if factor and p.factor != factor:
            continue
        c = compare_runs(store, p.a, p.b)
        out.append({**p.to_json(), "comparison": c, "confounds": confounds(p.factor, c.env_diff)})
    return out


# a pipeline's budget: its stored pairs compared output by output, each by its kind (by_kind)


def output_budget(store: Store, subject: Subject) -> dict[str, Any]:
    """Per factor of pipeline ``subject``, its pairs compared output by output by kind: how
    many, and per output how many pairs changed it and the largest difference; ``loose``: the
    outputs a repeat or process pair
    changed, with the lesson's line; ``inert``: seeds whose own pairs changed no output (a measurement:
    the seed is read but reaches nothing these outputs show, e.g. a convex model's init);
    ``shapes``: each output whose shape a factor changed (its first such pair): no kind
    compares arrays of two shapes, so it is said, never measured; ``not_in_dtype``: floating
    outputs a float32 run of precision returned in another precision."""
    kinds = subject.kinds
    rows: dict[str, dict[str, Any]] = {}
    shapes: dict[tuple[str, str], dict[str, Any]] = {}
    wide: dict[str, None] = {}
    for factor, a, b in pairs(store, subject):
        diffs = compare_outputs(store, a, b, kinds)
        tally(rows.setdefault(factor, {"pairs": 0, "outputs": {}}), diffs)
        if factor == "precision":  # the float32 run's outputs that run left in float64
            for r in (a, b):
                wide.update(dict.fromkeys(store.run(r).manifest.get("not_in_dtype") or []))
        for name, d in diffs.items():
            if "shape" in d:
                shapes.setdefault(
                    (factor, name),
                    {
                        "factor": factor,
                        "output": name,
                        "kind": d["kind"],
                        "a": a,
                        "b": b,
                        "shapes": d["shape"],
                    },
                )
    # the null experiment: the same spec run twice, or in a fresh and a warm worker (a process
    # factor's difference is a generator's state carried between runs, not the environment)
    rows = {f: rows[f] for f in sorted(rows, key=lambda f: factor_order(f, subject.seeds))}
    loose = list(
        dict.fromkeys(
            n
            for f in ("repeat", "process")
            for n, o in rows.get(f, {}).get("outputs", {}).items()
            if o["changed"]
        )
    )
    inert = [
        f.split(":", 1)[1]
        for f, r in rows.items()
        if f.startswith("seed:") and not any(o["changed"] for o in r["outputs"].values())
    ]
    line = ""
    if loose:
        line = (
            f"{', '.join(loose)} differ{'s' if len(loose) == 1 else ''} between runs with the "
            f"same named seeds: " + LOOSE.format(seeds=", ".join(subject.seeds) or "none")
        )
        carried = [
            n
            for n, o in rows.get("process", {}).get("outputs", {}).items()
            if o["changed"]
            and not rows.get("repeat", {}).get("outputs", {}).get(n, {}).get("changed")
        ]
        if carried and "repeat" in rows:  # a fresh process draws the same: state carried over
            line += (
                f"; {', '.join(carried)} differ{'s' if len(carried) == 1 else ''} only in "
                f"a worker that made a run before: {CARRIED}"
            )
    return {
        "pipeline": subject.sha256,
        "name": subject.name,
        "seeds": list(subject.seeds),
        "factors": rows,
        "loose": loose,
        "loose_line": line,
        "inert": inert,
        "shapes": list(shapes.values()),
        "not_in_dtype": list(wide),
        # runs whose outputs do not fit the file's KINDS (a bundle's, imported before the
        # file was known here): left out of every pair, each said in one line
        "unfit": list(unfit(store, subject).values()),
    }


def output_pair_details(store: Store, subject: Subject, factor: str) -> list[dict[str, Any]]:
    """The pairs behind one factor's row, each with its label and compare's {output: ...}."""
    found = set(pairs(store, subject))
    # in the order they were planned (seed 0 vs 1, 0 vs 2 ...), not pairs()' sorted run ids
    return [
        {
            "factor": p.factor,
            "a": p.a,
            "b": p.b,
            "label": p.label or f"{p.a[:12]} vs {p.b[:12]}",
            "outputs": compare_outputs(store, p.a, p.b, subject.kinds),
        }
        for p in store.pairs(subject.sha256)
        if p.factor == factor and (p.factor, p.a, p.b) in found
    ]


def factor_order(name: str, seeds: Sequence[str]) -> tuple[int, int]:
    """Where a pipeline's factor stands among its rows: kit's table order (repeat, process,
    host, threads, ...), each seed:NAME just after seed in the file's SEEDS order."""
    if name.startswith("seed:") and name.split(":", 1)[1] in seeds:
        return factors.order("seed"), 1 + list(seeds).index(name.split(":", 1)[1])
    return factors.order(name), 0
