"""A lab pipeline's conclusions: paired-bootstrap verdicts of its models per run, and per factor
whether a verdict changes across its pairs; with one model, the spread of its accuracy."""

from __future__ import annotations

import numpy as np

from ..runs.store import Store
from .compare import THRESHOLD, positive_class
from .lab_budget import pairs
from .lab_pairs import unfit
from .verdicts import bootstrap

class Unfit(Exception):
    """A run whose outputs cannot be scored (one line: which output, which shapes)."""


def models_and_truth(info: dict) -> tuple:
    """(the ``probabilities`` outputs, in KINDS order; the ``truth`` output or None)."""
    kinds = info.get("kinds", {})
    truth = [k for k, v in kinds.items() if v == "truth"]
    return tuple(k for k, v in kinds.items() if v == "probabilities"), (truth[0] if truth else None)


def scores(store: Store, run: str, models: tuple, truth: str) -> tuple:
    """(probabilities as 1-d arrays of the positive class, truth as 0/1) of one run; Unfit
    naming the output when a shape cannot be scored against the truth."""
    y = store.array(run, truth)
    if y.ndim != 1 or not np.isin(np.unique(y), (0, 1)).all():
        raise Unfit(f"{truth} (truth) holds {len(np.unique(y))} classes: verdicts score a "
                    f"0/1 truth (two classes)")
    probs = {}
    for m in models:
        p = positive_class(store.array(run, m))  # predict_proba of two classes: column 1
        if p is None or len(p) != len(y):
            raise Unfit(f"{m} (probabilities) has shape {list(store.array(run, m).shape)} but "
                        f"{truth} (truth) has shape {list(y.shape)}: a model's probabilities "
                        f"are one per truth row (or n x 2)")
        probs[m] = p
    return probs, y.astype(np.int64)


def _per_run(store: Store, run: str, models: tuple, truth: str) -> dict:
    probs, y = scores(store, run, models, truth)
    if len(models) == 1:
        m = models[0]
        return {"_scores": {m: {"acc": float(np.mean((probs[m] > THRESHOLD) == y))}}}
    return bootstrap(probs, y, models=models)


def lab_verdicts(store: Store, info: dict) -> dict:
    """Per factor of pipeline ``info``: with two or more models, each verdict ("b-a acc|auc":
    >, < or =) per run and in how many of the factor's pairs it changes; with one model, its
    accuracy per run and the spread across the factor's runs. ``why``: why there are none;
    ``unfit``: runs whose outputs cannot be scored, one line each."""
    models, truth = models_and_truth(info)
    out = {"pipeline": info["sha256"], "name": info["name"], "models": list(models),
           "truth": truth, "factors": {}, "unfit": [], "why": ""}
    if truth is None or not models:
        out["why"] = (f"{info['name']} declares no {'truth' if truth is None else 'probabilities'}"
                      f" output: verdicts need KINDS with a \"truth\" output and at least one "
                      f"\"probabilities\" output")
        return out
    per_run: dict = {}

    def verdicts_of(run):
        if run not in per_run:
            try:
                per_run[run] = _per_run(store, run, models, truth)
            except Unfit as e:
                per_run[run] = None
                out["unfit"].append(f"run {run[:12]}: {e}")
        return per_run[run]

    out["unfit"] += unfit(store, info["sha256"], info.get("kinds", {})).values()
    for factor, a, b in pairs(store, info["sha256"], info.get("kinds", {})):
        va, vb = verdicts_of(a), verdicts_of(b)
        if va is None or vb is None:
            continue
        f = out["factors"].setdefault(factor, {"pairs": 0, "runs": [], "verdicts": {},
                                               "accuracy": {}})
        f["pairs"] += 1
        for r, v in ((a, va), (b, vb)):
            if r not in f["runs"]:
                f["runs"].append(r)
                for m, s in v["_scores"].items():
                    f["accuracy"].setdefault(m, []).append(s["acc"])
        for key in (k for k in va if not k.startswith("_")):
            row = f["verdicts"].setdefault(key, {"per_run": {}, "diff": {}, "changed": 0,
                                                 "models": _models_of(key, models)})
            for r, v in ((a, va), (b, vb)):
                row["per_run"][r], row["diff"][r] = v[key]["verdict"], v[key]["diff"]
            row["changed"] += va[key]["verdict"] != vb[key]["verdict"]
    for f in out["factors"].values():
        f["spread"] = {m: {"runs": len(acc), "min": min(acc), "max": max(acc),
                           "sd": float(np.std(acc, ddof=1)) if len(acc) > 1 else 0.0}
                       for m, acc in f["accuracy"].items()}
        for row in f["verdicts"].values():
            counts = {v: list(row["per_run"].values()).count(v) for v in (">", "<", "=")}
            row.update(counts=counts, stable=row["changed"] == 0)
    return out


def _models_of(key: str, models: tuple) -> list:
    """[b, a] of the verdict "b-a metric" (an output's name may hold a "-" itself)."""
    pair = key.rsplit(" ", 1)[0]
    return next([b, a] for b in models for a in models if f"{b}-{a}" == pair)
