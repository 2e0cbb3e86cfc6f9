"""The budget: one row per factor, every effect also in units of what a seed changes."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from .compare import STAGES, compare_runs
from .store import Store
from .verdicts import changed, run_verdicts
from .worker.pipeline import MODELS

YARDSTICK = ("seed", "")  # (factor, level) whose pairs define one "seed unit"
# environment attributes a factor is meant to change; any other difference is a confound
_EXPLAINED = {
    "threads": re.compile(r"^env:(OMP|OPENBLAS|MKL|VECLIB)_[A-Z_]*THREADS$|:num_threads$"),
    "sklearn": re.compile(r"^package:scikit-learn$"),
    "numpy": re.compile(r"^package:(numpy|scipy)$|^blas@(numpy|scipy):version$"),
    "blas": re.compile(r"^package:(numpy|scipy)$|^blas@|^openmp@"),
    "python": re.compile(r"^python$"),
    "arch": re.compile(r"^machine$|^rosetta$|:architecture$|^env:(OPENBLAS_CORETYPE|MKL_CBWR)$"),
}


def confounds(factor: str, env_diff: dict) -> dict:
    explained = _EXPLAINED.get(factor)
    return {k: v for k, v in env_diff.items() if not (explained and explained.search(k))}


def _median(xs):
    return float(np.median(xs)) if len(xs) else None


def _ratio(x, unit):
    return None if x is None or not unit else x / unit


def _yardstick(comps: list, runs: list, store: Store) -> dict | None:
    if not comps:
        return None
    scores = [run_verdicts(store, r)["_scores"] for r in runs]
    return {"pairs": len(comps), "runs": len(runs),
            "emb_rel": _median([c["svd_rand"]["rel_fro"] for c in comps]),
            "flips": {m: _median([c["models"][m]["flips"] for c in comps]) for m in MODELS},
            "acc_sd": {m: float(np.std([s[m]["acc"] for s in scores], ddof=1)) for m in MODELS},
            "auc_sd": {m: float(np.std([s[m]["auc"] for s in scores], ddof=1)) for m in MODELS}}


def _row(factor: str, level: str, comps: list, labels: list, unit: dict | None,
         vchanges: list, pair_ids: list) -> dict:
    n = len(comps)
    identical = {s: sum(bool(c["identical"].get(s)) for c in comps) for s in STAGES}
    emb = max(c["svd_rand"]["rel_fro"] for c in comps)
    models = {}
    for m in MODELS:
        flips = [c["models"][m]["flips"] for c in comps]
        med = _median(flips)
        models[m] = {
            "flips_median": med, "flips_max": int(max(flips)),
            "max_dp": max(c["models"][m]["max_dp"] for c in comps),
            "max_abs_d_acc": max(abs(c["models"][m]["d_acc"]) for c in comps),
            "flips_median_seed_units": _ratio(med, unit and unit["flips"][m]),
            "flips_max_seed_units": _ratio(max(flips), unit and unit["flips"][m]),
        }
    conf = defaultdict(set)
    for c in comps:
        for k, (va, vb) in confounds(factor, c["env_diff"]).items():
            conf[k].add(f"{va} -> {vb}")
    return {
        "factor": factor, "level": level, "pairs": n, "labels": labels,
        "n_test": comps[0]["n_test"],
        "identical": identical,
        "all_identical": sum(all(c["identical"].values()) for c in comps),
        "emb_rel_max": emb,
        "emb_rel_median": _median([c["svd_rand"]["rel_fro"] for c in comps]),
        "emb_rel_seed_units": _ratio(emb, unit and unit["emb_rel"]),
        "arpack_rel_max": max(c["svd_arpack"]["rel_fro"] for c in comps),
        "runs": list(dict.fromkeys(r for p in pair_ids for r in p)),
        "sv_rel_max": max(c["svd_rand"]["sv_rel_max"] for c in comps),
        "sign_flips_max": max(c["svd_rand"]["sign_flips"] for c in comps),
        "kmeans_ari_min": min(c["kmeans_ari"] for c in comps),
        "kmeans_ari_median": _median([c["kmeans_ari"] for c in comps]),
        "knn_jaccard_min": min(c["knn_jaccard"] for c in comps),
        "knn_jaccard_median": _median([c["knn_jaccard"] for c in comps]),
        "models": models,
        "verdicts_changed_max": max(len(v) for v in vchanges),
        "verdict_changes": {k: sum(k in v for v in vchanges)
                            for k in sorted({k for v in vchanges for k in v})},
        "confounds": {k: sorted(v) for k, v in sorted(conf.items())},
    }


def budget(store: Store, dataset: str) -> dict:
    """Budget rows for every factor with stored pairs on one dataset (by sha256)."""
    groups = defaultdict(list)
    for p in store.pairs(dataset):
        groups[(p["factor"], p["level"])].append(p)
    comps = {key: [compare_runs(store, p["a"], p["b"]) for p in ps] for key, ps in groups.items()}
    vchanges = {key: [changed(run_verdicts(store, p["a"]), run_verdicts(store, p["b"])) for p in ps]
                for key, ps in groups.items()}
    seed_runs = list(dict.fromkeys(r for p in groups.get(YARDSTICK, []) for r in (p["a"], p["b"])))
    unit = _yardstick(comps.get(YARDSTICK, []), seed_runs, store)
    rows = [_row(f, lvl, comps[(f, lvl)], [p["label"] for p in groups[(f, lvl)]], unit,
                 vchanges[(f, lvl)], [(p["a"], p["b"]) for p in groups[(f, lvl)]])
            for (f, lvl) in sorted(groups, key=_order)]
    note = None if unit else ("no seed runs on this dataset, so no seed units: "
                              "run `kit run --factor seed` with the same dataset")
    return {"dataset": store.datasets().get(dataset, {"sha256": dataset}), "yardstick": unit,
            "rows": rows, "note": note}


_ROW_ORDER = ("repeat", "threads", "precision", "arch", "blas", "numpy", "python", "sklearn",
              "seed:svd", "seed:kmeans", "seed:models", "svd-iters", "seed")


def _order(key):
    factor, level = key
    rank = _ROW_ORDER.index(factor) if factor in _ROW_ORDER else len(_ROW_ORDER)
    return (rank, factor, int(level) if level.isdigit() else 0, level)


def pair_details(store: Store, dataset: str, factor: str | None = None) -> list:
    """Every stored pair (optionally of one factor) with its comparison and confounds."""
    out = []
    for p in store.pairs(dataset):
        if factor and p["factor"] != factor:
            continue
        c = compare_runs(store, p["a"], p["b"])
        out.append({**p, "comparison": c, "confounds": confounds(p["factor"], c["env_diff"])})
    return out
