"""What to pin first: factors ranked by how far they travel, advice generated from the numbers.

Every sentence is built from a measured figure of the budget (or the runs behind it) and
carries that figure in its ``basis``; a factor with no stored pairs is listed as not measured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import factors
from ..core.numbers import fmt
from ..envs.descriptions import description, descriptions
from ..envs.platforms import Platform, detect
from ..runs.planning.availability import availability
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .budget import budget
from .compare import ALL_MODELS
from .explain_advice import recommendations as explain_recommendations
from .homology_words import recommendations as homology_recommendations
from .records import BudgetRow
from .splits import advice as splits_advice
from .tolerances import changed_models, reach
from .verdicts import describe, stability

LEVELS = ("conclusions", "predictions", "magnitudes", "bits", "nothing")
# the lesson on seeds: its rule, said beside every seed that reaches an output
RULE = (
    "name the seeds separately and record each with the run, so a reproduction can vary one "
    "while holding the others"
)
# said beside a seed the file already names that reaches outputs: what to do with it now
HOLD = (
    "keep it recorded with every run and fixed while comparing anything else; report what "
    "it reaches across several of its values, not one"
)

_MODEL_NAMES = {
    "lr": "logistic regression",
    "mlp": "MLP",
    "hgb": "gradient boosting",
    "rf": "random forest",
    "torch_mlp": "PyTorch MLP",
}


# what each yardstick is the unit of (kit.analysis.budget: torch-seed's pairs are the torch MLP's)
# one piece of advice: {"kind", "text", "basis", ...}, as `kit advise --json` writes it
Rec = dict[str, Any]
_UNIT_OF = {"seed": "the embedding and the classifiers", "torch-seed": "the PyTorch MLP"}


def _z(x: float | None) -> float:  # a measure not taken (None) counts as 0 in a ranking
    return x or 0


def level(row: BudgetRow) -> str:
    """How far a factor's difference travelled, at worst over its pairs."""
    if _z(row.verdicts_changed_max) > 0:
        return "conclusions"
    if any(m.flips_max > 0 for m in row.models.values()):
        return "predictions"
    if (
        _z(row.emb_rel_max) > 0
        or _z(row.arpack_rel_max) > 0
        or (row.kmeans_ari_min is not None and row.kmeans_ari_min < 1)
        or (row.knn_jaccard_min is not None and row.knn_jaccard_min < 1)
        or any(m.max_dp > 0 for m in row.models.values())
    ):
        return "magnitudes"
    if row.all_identical < row.pairs:
        return "bits"
    return "nothing"


def _seed_units(row: BudgetRow) -> float | None:
    """How far a row travelled in seed units: the largest per-model flips, or for a row that
    moved only magnitudes the embedding's difference, the number its sentence gives."""
    if level(row) == "magnitudes" and row.emb_rel_seed_units is not None:
        return row.emb_rel_seed_units
    su = [
        m.flips_median_seed_units
        for m in row.models.values()
        if m.flips_median_seed_units is not None
    ]
    return max(su) if su else None


def _reach(row: BudgetRow) -> float:  # size within a level: seed units, else raw flips
    flips = max((m.flips_max for m in row.models.values()), default=0)  # none: digests only
    su = _seed_units(row)
    return su if su is not None else flips / 1e3 + _z(row.emb_rel_max)


def _ranked(name: str) -> bool:
    """Null checks, remedies and probes are read, not ranked (kit.core.factors says which)."""
    f = factors.get(name)
    return f is None or f.ranked


def _verb(name: str) -> str:
    """A seed is named and recorded; a version or a setting is pinned."""
    f = factors.get(name)
    return "Name and record" if f and f.varies == factors.SEED else "Pin"


def _flips_max(row: BudgetRow, model: str) -> int:
    """Most flips of ``model`` in a row's pairs (0: it was not in them)."""
    return row.models[model].flips_max if model in row.models else 0


def _name(row: BudgetRow) -> str:
    return row.factor + (f"={row.level}" if row.level else "")


def advise(
    store: Store, dataset: str, b: dict[str, Any] | None = None, plat: Platform | None = None
) -> dict[str, Any]:
    """``b``: the dataset's budget if the caller already has it (computed once, not twice);
    ``plat``: the machine whose reasons explain the factors that cannot be measured on it."""
    b = b or budget(store, dataset)
    rows = {_name(r): r for r in b["rows"]}
    ranked = sorted(
        (r for r in b["rows"] if _ranked(r.factor)),
        key=lambda r: (LEVELS.index(level(r)), -_reach(r)),
    )
    # a yardstick (seed, torch-seed) is 1 seed unit by definition and a seed is named and
    # recorded, never pinned: ranked first in "what to pin first" it read as "pin your seed".
    # It is shown as the unit; its advice stays a sentence of its own below.
    # (a yardstick is a factor kit knows: is_yardstick says so of known names alone)
    unit = [
        {
            "factor": _name(r),
            "what": description(factors.FACTORS[r.factor]),
            "level": level(r),
            "pairs": r.pairs,
            "of": _UNIT_OF.get(r.factor, "the others"),
        }
        for r in ranked
        if factors.is_yardstick(r.factor)
    ]
    ranking = [
        {
            "factor": _name(r),
            "level": level(r),
            "reach_seed_units": _seed_units(r),
            "pairs": r.pairs,
            "confounds": sorted(r.confounds),
        }
        for r in ranked
        if not factors.is_yardstick(r.factor)
    ]
    per_model = {
        m: [
            {
                "factor": _name(r),
                "flips_median": r.models[m].flips_median,
                "flips_max": r.models[m].flips_max,
                "seed_units": r.models[m].flips_median_seed_units,
            }
            for r in sorted(ranked, key=lambda r: -_flips_max(r, m))
            if _flips_max(r, m) > 0
        ]
        for m in ALL_MODELS
    }
    recs: list[Rec] = []
    _null(rows, recs)
    _container(rows, recs)
    _one_class(b, recs)
    for r in ranked:
        _factor_advice(r, recs)
    _amplification(b, recs)
    _solver(store, b, rows, recs)
    _converged(store, rows, recs)
    _signs(ranked, recs)
    _margins(store, rows, recs)
    _mps(store, rows, recs, plat)
    # "changes what is measured" (never a thing to pin), then what homology does to verdicts
    recs += splits_advice(b["rows"]) + homology_recommendations(b.get("homology"))
    recs += explain_recommendations(store, dataset, b)  # once `kit explain` stored runs
    measured = {r.factor for r in b["rows"]}
    # a factor this machine cannot run says why, so its gap is read as a gap, not as stability
    why = {r["factor"]: r["reason"] for r in availability(plat) if not r["available"]}
    not_measured = [
        {"factor": f, "what": d, "cannot_run_here": why.get(f)}
        for f, d in descriptions().items()
        if f not in measured
    ]
    return {
        "dataset": b["dataset"],
        "yardstick": b["yardstick"],
        "unit": unit,
        "ranking": ranking,
        "per_model": per_model,
        "recommendations": recs,
        "not_measured": not_measured,
    }


MPS_NOTE = (
    "PyTorch documents the MPS backend as non-deterministic even with "
    "torch.use_deterministic_algorithms(True): not every MPS operation has a deterministic "
    "implementation. On a Mac, read the torch-deterministic row as 'deterministic algorithms "
    "on the CPU' and expect the torch-device row to differ from run to run; for bitwise "
    "repeatable torch results, pin the device to the CPU."
)


def _mps(store: Store, rows: dict[str, BudgetRow], recs: list[Rec], plat: Platform | None) -> None:
    """On macOS, or wherever MPS runs are stored, the torch rows say what MPS cannot promise."""
    torch_rows = [rows[k] for k in ("torch-device", "torch-deterministic") if k in rows]
    if not torch_rows:
        return
    on_mac = (plat or detect()).system == "darwin"
    used = any(store.run(r).spec.device == "mps" for row in torch_rows for r in row.runs)
    if on_mac or used:
        recs.append(
            {
                "kind": "mps",
                "text": MPS_NOTE,
                "basis": {"factors": [r.factor for r in torch_rows], "mps_runs": used},
            }
        )


def _null(rows: dict[str, BudgetRow], recs: list[Rec]) -> None:
    p = rows.get("process")
    if p is not None and p.all_identical != p.pairs:
        recs.append(
            {
                "kind": "null",
                "text": f"WARNING: a run made in a warm worker differed from "
                f"the same run in a fresh process ({p.pairs - p.all_identical} of "
                f"{p.pairs} pairs): something of one run leaked into the next. Run with "
                "`kit run --fresh` and report it.",
                "basis": {"factor": "process", "pairs": p.pairs, "identical": p.all_identical},
            }
        )
    r = rows.get("repeat")
    if r is None:
        return
    if r.all_identical == r.pairs:
        recs.append(
            {
                "kind": "null",
                "text": f"The null experiment held: {r.pairs} repeated run "
                "pair(s) were bitwise identical at every stage, so the differences below are real.",
                "basis": {"factor": "repeat", "pairs": r.pairs, "identical": r.all_identical},
            }
        )
    else:
        recs.append(
            {
                "kind": "null",
                "text": f"WARNING: the null experiment failed: only "
                f"{r.all_identical} of {r.pairs} repeated pairs were identical. A generator "
                "is loose or the environment is unstable; treat every row as suspect.",
                "basis": {"factor": "repeat", "pairs": r.pairs, "identical": r.all_identical},
            }
        )


def _container(rows: dict[str, BudgetRow], recs: list[Rec]) -> None:
    """The container factor is expected to change nothing: say whether it held, and a
    difference as the finding it is."""
    r = rows.get("container")
    if r is None:
        return
    basis = {"factor": "container", "pairs": r.pairs, "identical": r.all_identical}
    if r.all_identical == r.pairs:
        text = (
            f"The image held: {r.pairs} pair(s) of a stack's venv and its container image, "
            "built from the same lock, were bitwise identical at every stage. Shipping the "
            "image pins the operating system at no cost to the results here; it cannot pin "
            "the CPU's kernels or the machine (docs/containers.md)."
        )
    else:
        text = (
            f"A FINDING: a container image differed from the venv built from the same lock "
            f"in {r.pairs - r.all_identical} of {r.pairs} pair(s): the operating system's "
            "libraries reach the results. Ship the image, not only the lock, and see the "
            "os factor."
        )
    recs.append({"kind": "container", "text": text, "basis": basis})


def _one_class(b: dict[str, Any], recs: list[Rec]) -> None:
    """A model that predicts one class everywhere flips nothing: say so before any row is read."""
    runs: dict[str, set[str]] = {}
    for r in b["rows"]:
        for m, d in r.models.items():
            if d.one_class_runs:
                runs.setdefault(m, set()).add(_name(r))
    for m, rows in runs.items():
        n = b["dataset"].get("rows")
        recs.append(
            {
                "kind": "one-class",
                "text": (
                    f"WARNING: the {_MODEL_NAMES[m]} predicted a single class for every test protein in "
                    f"some runs of {', '.join(sorted(rows))}: its zero flips are not stability but a model "
                    f"that did not learn{f' on {n} proteins' if n else ''}. Use a larger dataset (--n) "
                    "before reading its rows."
                ),
                "basis": {"model": m, "factors": sorted(rows), "proteins": n},
            }
        )


def _factor_advice(r: BudgetRow, recs: list[Rec]) -> None:
    lvl, name = level(r), _name(r)
    f = factors.get(r.factor)
    what = description(f) if f else r.factor
    basis = {"factor": name, "level": lvl, "pairs": r.pairs}
    if lvl == "conclusions":
        key, k = max(r.verdict_changes.items(), key=lambda kv: kv[1])
        basis.update(verdict=key, pairs_changed=k, verdicts_changed_max=r.verdicts_changed_max)
        text = (
            f"{_verb(r.factor)} {name} ({what}): it changed a conclusion. {describe(key)} changed its "
            f"verdict in {k} of {r.pairs} pair(s); up to {r.verdicts_changed_max} of the "
            "12 verdicts changed in one pair."
        )
    elif lvl == "predictions":
        moved = [(m, d) for m, d in r.models.items() if d.flips_max > 0]
        parts = []
        for m, d in moved:
            su = d.flips_median_seed_units
            parts.append(
                f"{_MODEL_NAMES[m]} median {fmt(d.flips_median)}, at most "
                f"{d.flips_max} of {r.n_test}"
                + (f" ({fmt(su)} seed units)" if su is not None else "")
            )
            basis[m] = {"flips_median": d.flips_median, "flips_max": d.flips_max, "seed_units": su}
        text = (
            f"{_verb(r.factor)} {name} ({what}): it changed test predictions: "
            + "; ".join(parts)
            + "."
        )
    elif lvl == "magnitudes" and r.emb_rel_max is None:  # torch rows: probabilities only
        dp = max(d.max_dp for d in r.models.values())
        basis.update(max_dp=dp)
        text = (
            f"{name} moved predicted probabilities by at most {fmt(dp)} and flipped no "
            "prediction: low priority."
        )
    elif lvl == "magnitudes":
        basis.update(emb_rel_max=r.emb_rel_max, emb_seed_units=r.emb_rel_seed_units)
        text = (
            f"{name} moved the embedding by at most {fmt(r.emb_rel_max)}"
            + (
                f" ({fmt(r.emb_rel_seed_units)} seed units)"
                if r.emb_rel_seed_units is not None
                else ""
            )
            + " and changed no prediction: low priority."
        )
    elif lvl == "bits" and not r.models:  # its pairs are known by their stage digests alone
        text = (
            f"{name} changed bits; how far is not known here: its runs were imported without "
            "their arrays (`kit export --arrays` on the other machine measures it)."
        )
    elif lvl == "bits":
        text = (
            f"{name} changed bits only (no measurable magnitude): no need to pin for these models."
        )
    else:
        text = f"{name}: every stage bitwise identical in all {r.pairs} pair(s): no need to pin."
    recs.append({"kind": "factor", "text": text, "basis": basis})


def _amplification(b: dict[str, Any], recs: list[Rec]) -> None:
    """Where a factor flipped more than its embedding difference explains, say so."""
    for name, e in (b.get("amplification") or {}).items():
        odd = {m: d for m, d in e["models"].items() if d["verdict"] == "something else"}
        if odd:
            recs.append(
                {
                    "kind": "amplification",
                    "text": (
                        f"{name} flipped more than its embedding difference ({fmt(e['emb_rel'])}) explains: "
                        + "; ".join(
                            f"{_MODEL_NAMES[m]} {fmt(d['observed'])} observed against "
                            f"{fmt(d['predicted'])} predicted by the perturbation curve"
                            for m, d in odd.items()
                        )
                        + ". Something other than the input's magnitude changed (a library's algorithm, "
                        "say): pin that version."
                    ),
                    "basis": {"factor": name, "emb_rel": e["emb_rel"], "models": odd},
                }
            )


def _svd_seconds(store: Store, runs: list[str], stage: str = "svd_rand") -> float | None:
    t = [store.run(r).manifest["timings"].get(stage, {}).get("wall_s") for r in runs]
    t = [x for x in t if x is not None]
    return float(np.median(t)) if t else None


def _solver(store: Store, b: dict[str, Any], rows: dict[str, BudgetRow], recs: list[Rec]) -> None:
    seed = rows.get("seed")
    if seed and seed.emb_rel_max is not None:  # None: its runs' arrays are not here
        recs.append(
            {
                "kind": "solver",
                "text": (
                    f"A converged solver removes the seed from the embedding: across seeds the ARPACK "
                    f"embedding moved at most {fmt(seed.arpack_rel_max)}, the randomized one "
                    f"{fmt(seed.emb_rel_max)}."
                ),
                "basis": {
                    "factor": "seed",
                    "arpack_rel_max": seed.arpack_rel_max,
                    "emb_rel_max": seed.emb_rel_max,
                },
            }
        )
    levels = sorted((int(r.level), r) for r in b["rows"] if r.factor == "svd-iters")
    if len(levels) >= 2:
        (lo, rlo), (hi, rhi) = levels[0], levels[-1]
        secs = {it: _svd_seconds(store, r.runs) for it, r in levels}
        tlo, thi = secs[lo], secs[hi]
        cost = thi / tlo if tlo and thi else None
        fl = {m: (rlo.models[m].flips_median, rhi.models[m].flips_median) for m in MODELS}
        recs.append(
            {
                "kind": "solver",
                "text": (
                    f"Raising randomized-SVD power iterations from {lo} to {hi} changed the median flips "
                    "across seeds "
                    + ", ".join(
                        f"{_MODEL_NAMES[m]} {fmt(a)} -> {fmt(c)}" for m, (a, c) in fl.items()
                    )
                    + f"; neighbour agreement (Jaccard, median) {fmt(rlo.knn_jaccard_median)} -> "
                    f"{fmt(rhi.knn_jaccard_median)}"
                    + (
                        f", at {cost:.1f}x the SVD time ({tlo:.2f} s -> {thi:.2f} s)."
                        if cost
                        else "."
                    )
                ),
                "basis": {
                    "factor": "svd-iters",
                    "levels": [lo, hi],
                    "flips": fl,
                    "svd_seconds": [tlo, thi],
                    "svd_seconds_by_level": secs,
                    "knn_jaccard": [rlo.knn_jaccard_median, rhi.knn_jaccard_median],
                },
            }
        )


def _converged(store: Store, rows: dict[str, BudgetRow], recs: list[Rec]) -> None:
    """The remedy measured, not assumed: the same seed pairs with the models on ARPACK."""
    solver = rows.get("svd-solver")
    ref_name = "svd-iters=5" if "svd-iters=5" in rows else "seed"
    ref = rows.get(ref_name)
    if not (solver and ref):
        return
    fl = {
        m: (ref.models[m].flips_median, solver.models[m].flips_median)
        for m in MODELS
        if m in ref.models and m in solver.models
    }
    t_rand, t_arp = _svd_seconds(store, ref.runs), _svd_seconds(store, solver.runs, "svd_arpack")
    stable = [sum(v.stable for v in stability(store, r.runs)) for r in (ref, solver)]
    recs.append(
        {
            "kind": "solver",
            "text": (
                "With k-means, neighbours and the classifiers on the converged ARPACK embedding (svd-solver) "
                f"instead of the randomized one ({ref_name}), the median flips across seeds went "
                + ", ".join(f"{_MODEL_NAMES[m]} {fmt(a)} -> {fmt(c)}" for m, (a, c) in fl.items())
                + f"; neighbour agreement (Jaccard, median) {fmt(ref.knn_jaccard_median)} -> "
                f"{fmt(solver.knn_jaccard_median)}; k-means agreement (ARI, median) "
                f"{fmt(ref.kmeans_ari_median)} -> {fmt(solver.kmeans_ari_median)}; verdicts "
                f"the same in every seed {stable[0]} -> {stable[1]} of 12"
                + (
                    f"; ARPACK took {t_arp:.2f} s against {t_rand:.2f} s for the randomized SVD."
                    if t_rand and t_arp
                    else "."
                )
            ),
            "basis": {
                "factor": "svd-solver",
                "reference": ref_name,
                "flips": fl,
                "svd_seconds": [t_rand, t_arp],
                "knn_jaccard": [ref.knn_jaccard_median, solver.knn_jaccard_median],
                "kmeans_ari": [ref.kmeans_ari_median, solver.kmeans_ari_median],
                "stable_verdicts": stable,
            },
        }
    )


def _signs(ranked: list[BudgetRow], recs: list[Rec]) -> None:
    flips = [(r.sign_flips_max, _name(r)) for r in ranked if _z(r.sign_flips_max) > 0]
    if flips:
        k, name = max(flips)
        recs.append(
            {
                "kind": "signs",
                "text": (
                    f"Publish embeddings with a sign convention: {name} flipped the sign of up to {k} "
                    "of 64 SVD columns (harmless to a classifier, not to a script or plot that reads a component)."
                ),
                "basis": {"factor": name, "sign_flips_max": k},
            }
        )


def _margins(store: Store, rows: dict[str, BudgetRow], recs: list[Rec]) -> None:
    seed = rows.get("seed")
    if not seed:
        return
    for v in stability(store, seed.runs):
        if not v.stable:
            top = max(v.counts.items(), key=lambda kv: kv[1])
            sig = v.counts[">"] + v.counts["<"]
            recs.append(
                {
                    "kind": "verdict",
                    "text": (
                        f"{describe(v.verdict)}: significant in {sig} of {v.runs} seeds. Log this "
                        "verdict under a second seed (and library version) before reporting it."
                    ),
                    "basis": {
                        "verdict": v.verdict,
                        "counts": v.counts,
                        "runs": v.runs,
                        "majority": top[0],
                    },
                }
            )


# a pipeline's advice: the loose generator, then each named seed by what it reaches


def output_advice(b: dict[str, Any], v: dict[str, Any] | None = None) -> dict[str, Any]:
    """What to fix first in a lab's pipeline: ranked steps from its output_budget ``b`` (and
    output_verdicts ``v``): each {"step", ...}.

    step "loose": outputs that differ between runs with the same named seeds (first: until it is
    seeded every other comparison is a single draw); "null": no repeat pair stored yet;
    "shape": an output whose shape a factor changes; "seed": a named seed and the outputs it
    reaches (those a loose generator also moves left out: the seed's own effect cannot be told
    from it there), with the verdicts it changes; "pin": a library, machine or setting factor
    (sklearn, blas, threads, ...) and the outputs it reaches, each with its worst measure; seeds
    and pins ranked together by harm as kit's own advice ranks (conclusions, predictions,
    magnitudes), then by verdicts and outputs reached; "inert": a seed that reaches no output;
    "one-at-a-time": only `seed` (all at once) is stored."""
    steps = []
    rows = b["factors"]
    if b["loose"]:
        steps.append({"step": "loose", "outputs": list(b["loose"]), "line": b["loose_line"]})
    elif "repeat" not in rows:
        steps.append({"step": "null", "outputs": []})
    for s in b.get("shapes", []):
        steps.append({"step": "shape", **s})
    changes = _verdict_changes(v)
    concluded = changed_models(v) if v else {}
    ranked = []
    for factor, row in rows.items():
        seed = factor.startswith("seed:")
        if not (seed or _pinned(factor)):
            continue
        reached = [n for n, o in row["outputs"].items() if o["changed"] and n not in b["loose"]]
        levels = {n: reach(row["outputs"][n], n in concluded.get(factor, ())) for n in reached}
        worst = min(
            (LEVELS.index(lv) for lv in levels.values() if lv in LEVELS),
            default=LEVELS.index("bits"),
        )
        if seed and reached:
            ranked.append(
                {
                    "step": "seed",
                    "seed": factor.split(":", 1)[1],
                    "factor": factor,
                    "outputs": reached,
                    "pairs": row["pairs"],
                    "level": LEVELS[worst],
                    "verdicts": changes.get(factor, []),
                    "rule": HOLD,
                }
            )
        elif not seed and LEVELS[worst] in LEVELS[:3]:  # bits alone: nothing to pin for
            f = factors.get(factor)
            ranked.append(
                {
                    "step": "pin",
                    "factor": factor,
                    "what": description(f) if f else factor,
                    "level": LEVELS[worst],
                    "outputs": reached,
                    "pairs": row["pairs"],
                    "verdicts": changes.get(factor, []),
                    "measures": [_worst_measure(n, row["outputs"][n], levels[n]) for n in reached],
                }
            )
    ranked.sort(
        key=lambda s: (
            LEVELS.index(s["level"]),
            -len(s["verdicts"]),
            -len(s["outputs"]),
            s["factor"],
        )
    )
    steps += ranked
    steps += [{"step": "inert", "seed": name, "outputs": []} for name in b["inert"]]
    if "seed" in rows and not any(f.startswith("seed:") for f in rows):
        steps.append(
            {
                "step": "one-at-a-time",
                "outputs": [],
                "rule": RULE,
                "verdicts": changes.get("seed", []),
                "seeds": list(b.get("seeds", [])),
            }
        )
    return {"pipeline": b["pipeline"], "name": b["name"], "steps": steps}


def _pinned(name: str) -> bool:
    """A factor whose difference a lab removes by pinning (a library, the BLAS, threads, the
    machine, a setting): ranked, and neither a seed nor the null experiment."""
    f = factors.get(name)
    return bool(f and f.ranked and f.varies not in (factors.SEED, factors.NOTHING))


# per kind, the one measure that says how far an output moved, and whether larger is worse
_MEASURES = {
    "labels": ("ari", False),
    "neighbours": ("jaccard", False),
    "probabilities": ("flips", True),
    "embedding": ("rel", True),
    "truth": ("changed", True),
    "proteins": ("changed", True),
    "classes": ("changed", True),
    "metrics": ("rel", True),
    "centroids": ("rel", True),
    "train proteins": ("changed", True),
}


def _worst_measure(name: str, o: dict[str, Any], lvl: str) -> dict[str, Any]:
    """{"output", "kind", "level", "measure", "value"}: an output's worst measured difference
    across a factor's pairs, in its kind's own measure (ARI for labels, flips for
    probabilities, ...; otherwise the largest relative difference)."""
    measure: str | None
    measure, most = _MEASURES.get(o["kind"], ("max_rel", True))
    if o["kind"] == "probabilities" and not o["most"].get("flips"):
        measure = "max_dp"  # no prediction changed: how far a probability moved
    got = (o["most"] if most else o["least"]).get(measure)
    if got is None:  # a measure this output's values do not take (an integer array)
        measure, got = next(
            ((k, o["most"][k]) for k in ("max_rel", "changed") if k in o["most"]), (None, None)
        )
    return {"output": name, "kind": o["kind"], "level": lvl, "measure": measure, "value": got}


def _verdict_changes(v: dict[str, Any] | None) -> dict[str, list[str]]:
    """{factor: the verdict keys that change in one of its pairs}."""
    if not v:
        return {}
    return {
        f: [k for k, row in r["verdicts"].items() if row["changed"]]
        for f, r in v["factors"].items()
    }
