"""Conclusions per run: a paired bootstrap of every model pair on accuracy and AUC.

Twelve verdicts per run (6 model pairs x 2 metrics): does the 95% percentile interval of the
difference exclude zero, and which way. The resampled test indices are fixed (2,000 resamples
from ``default_rng(12345)``), so every run of a dataset is resampled identically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core import factors
from ..core.errors import KitError
from ..core.spec import RunSpec
from ..core.subject import Subject
from ..runs.store import Store
from ..worker.names import unknown
from ..worker.pipeline import MODELS
from .auc import case_major_auc
from .by_kind import pairs, unfit
from .compare import THRESHOLD, has_arrays, positive_class
from .records import RunVerdict, Verdict

VERSION = 1
RESAMPLES = 2000
SEED = 12345
LEVEL = 0.95
METRICS = ("acc", "auc")
# "b - a" for each pair, later model first, as the paper's "boosting minus MLP"
PAIRS = tuple((b, a) for a, b in combinations(MODELS, 2))
KEYS = tuple(f"{b}-{a} {m}" for b, a in PAIRS for m in METRICS)
# one run's verdicts: {"b-a metric": {"diff", "lo", "hi", "verdict"}}, and "_scores": {model:
# {metric: value}} (a JSON document: cached in the store as it is)
Verdicts = dict[str, Any]


@lru_cache(maxsize=8)
def resample_weights(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples, n) counts: how often each test protein is drawn in each resample."""
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    rows = np.repeat(np.arange(resamples), n)
    w = np.bincount(rows * n + idx.ravel(), minlength=resamples * n).reshape(resamples, n)
    w.setflags(write=False)
    return w


@lru_cache(maxsize=8)
def _by_case(n: int, resamples: int, seed: int) -> np.ndarray:
    """resample_weights as (n, resamples) float64: a case's counts contiguous, for gathering."""
    w = np.ascontiguousarray(resample_weights(n, resamples, seed).T, dtype=np.float64)
    w.setflags(write=False)
    return w


_INT_AUC_N = 65_535  # a resample's AUC sums stay below n**2 / 2: int32 holds them up to here


@lru_cache(maxsize=8)
def _counts_by_case(n: int, resamples: int, seed: int) -> np.ndarray:
    """_by_case as int32 counts, for the AUC: its sums are whole numbers either way (the same
    bits come out), and its passes over the (n, resamples) weights, most of a verdict's cost,
    move half the bytes."""
    w = np.ascontiguousarray(resample_weights(n, resamples, seed).T, dtype=np.int32)
    w.setflags(write=False)
    return w


def bootstrap(
    probs: Mapping[str, ArrayLike],
    y: ArrayLike,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    weights: np.ndarray | None = None,
    models: Sequence[str] = MODELS,
) -> Verdicts:
    """The twelve verdicts for one run's test probabilities.

    ``models``: the models compared, each pair later one first (a lab pipeline's own
    probabilities outputs, output_verdicts); kit's four by default.

    ``weights``: (n, resamples) case-major counts to resample with instead of the proteins'
    (the cluster bootstrap's, kit.analysis.cluster_bootstrap); both models of a pair are scored
    under the same columns, so the bootstrap stays paired. A resample's accuracy is over the
    proteins it drew, which the proteins' own weights always number n.
    """
    labels = np.asarray(y).astype(np.int64)
    n = len(labels)
    Wc = _by_case(n, resamples, seed) if weights is None else weights
    Wa = _counts_by_case(n, resamples, seed) if weights is None and n <= _INT_AUC_N else Wc
    drawn = n if weights is None else Wc.sum(axis=0)  # exact: whole-number counts
    ones = np.ones((n, 1))
    stats: dict[str, dict[str, Any]] = {}
    pairs = PAIRS if tuple(models) == MODELS else tuple((b, a) for a, b in combinations(models, 2))
    for m in models:
        p = np.asarray(probs[m], np.float64)
        correct = ((p > 0.5) == labels).astype(np.float64)
        stats[m] = {
            "acc": (correct @ ones / n)[0],
            "acc_boot": correct @ Wc / drawn,
            "auc": case_major_auc(p, labels, ones)[0],
            "auc_boot": case_major_auc(p, labels, Wa),
        }
    out: Verdicts = {}
    q = [(1 - LEVEL) / 2 * 100, (1 + LEVEL) / 2 * 100]
    for b, a in pairs:
        for metric in METRICS:
            d = stats[b][metric + "_boot"] - stats[a][metric + "_boot"]
            lo, hi = np.nanpercentile(d, q)
            verdict = ">" if lo > 0 else "<" if hi < 0 else "="
            out[f"{b}-{a} {metric}"] = {
                "diff": float(stats[b][metric] - stats[a][metric]),
                "lo": float(lo),
                "hi": float(hi),
                "verdict": verdict,
            }
    out["_scores"] = {
        m: {"acc": float(stats[m]["acc"]), "auc": float(stats[m]["auc"])} for m in models
    }
    return out


def has_verdicts(spec: RunSpec) -> bool:
    """Runs that train the four classifiers (pipeline and perturbed runs; not torch runs)."""
    return spec.kind != "torch"


def run_verdicts(store: Store, run_id: str) -> Verdicts:
    """The stored verdicts of a run, computed once and kept in the store."""
    cached = store.verdicts(run_id, VERSION)
    if cached is not None:
        return cached
    probs = {m: store.array(run_id, m) for m in MODELS}
    v = bootstrap(probs, store.array(run_id, "y_test"))
    store.cache_verdicts(run_id, VERSION, v)
    return v


def without_arrays(store: Store, run_ids: Iterable[str]) -> list[str]:
    """The runs among ``run_ids`` whose arrays are not here, so whose verdicts cannot be
    recomputed (runs imported from a bundle exported without --arrays)."""
    return [r for r in dict.fromkeys(run_ids) if not has_arrays(store, r)]


def changed(va: Verdicts, vb: Verdicts) -> list[str]:
    """The verdict keys on which two runs disagree."""
    return [k for k in KEYS if va[k]["verdict"] != vb[k]["verdict"]]


def stability(
    store: Store, groups: list[list[str]] | list[str], labels: dict[str, str] | None = None
) -> list[Verdict]:
    """For each of the twelve verdicts: does it hold within every group of runs?

    ``groups`` is a list of run-id lists (a plain list of ids is one group). A group holds runs
    that differ only in what is being varied (a reference run and its partners), so a verdict
    is stable when every group agrees with itself; pooling runs of different stacks or levels
    would report differences the factor never made. Counts are over the distinct runs.
    Runs whose arrays are not here (a hash-only bundle's) are left out: their verdicts cannot
    be recomputed, and none is ever taken on trust (``without_arrays`` names them).
    """
    given = [groups] if groups and isinstance(groups[0], str) else groups
    sets = [list(dict.fromkeys(g)) for g in given]
    missing = set(without_arrays(store, [r for g in sets for r in g]))
    if missing:
        sets = [g for g in ([r for r in g if r not in missing] for g in sets) if g]
    if not sets:
        return []
    runs = list(dict.fromkeys(r for g in sets for r in g))
    per_run = {r: run_verdicts(store, r) for r in runs}
    rows = []
    for k in KEYS:
        counts = {">": 0, "<": 0, "=": 0}
        for r in runs:
            counts[per_run[r][k]["verdict"]] += 1
        split = sum(len({per_run[r][k]["verdict"] for r in g}) > 1 for g in sets)
        rows.append(
            Verdict(
                verdict=k,
                runs=len(runs),
                groups=len(sets),
                groups_changed=split,
                counts=counts,
                stable=split == 0,
                per_run=[
                    RunVerdict(run=r, label=(labels or {}).get(r, r[:12]), **per_run[r][k])
                    for r in runs
                ],
            )
        )
    return rows


def describe(key: str) -> str:
    """'hgb-mlp acc' -> 'hgb minus mlp, accuracy'."""
    pair, metric = key.split()
    b, a = pair.split("-")
    return f"{b} minus {a}, {'accuracy' if metric == 'acc' else 'AUC'}"


def run_label(spec: RunSpec, stack: bool = True) -> str:
    """A short human name for a run: what distinguishes it (its stack too, unless ``stack``
    is False because it is shown beside)."""
    seeds = sorted(set(spec.seed_dict.values()))
    seed = str(seeds[0]) if len(seeds) == 1 else ",".join(f"{k}={v}" for k, v in spec.seeds)
    parts = ([spec.stack] if stack else []) + [f"{spec.threads}t", f"seed {seed}"]
    if spec.kind == "perturb":
        parts.append(f"perturbed {spec.perturb}")
    elif spec.kind == "feed":
        parts.append(f"{spec.feed} on fed from {spec.input[:12]}")
    elif spec.kind == "torch":
        parts.insert(0, "torch MLP:")
        parts += [spec.device] + (["deterministic"] if spec.deterministic else [])
    if spec.split >= 0:
        parts.append(f"split {spec.split}")
    if spec.embedding != "randomized":
        parts.append(f"models on {spec.embedding}")
    if spec.dtype != "float64":
        parts.append(spec.dtype)
    if spec.svd_iters != 5:
        parts.append(f"{spec.svd_iters} iters")
    parts += [f"{k}={v}" for k, v in spec.env]
    if spec.replicate:
        parts.append(f"repeat {spec.replicate}")
    if spec.process:  # the process factor's two runs differ in nothing else
        parts.append(f"{spec.process} process")
    return " ".join(parts)


def verdict_sets(store: Store, dataset: str) -> dict[str, list[list[str]]]:
    """Named sets of run groups whose verdicts are compared: all seeds, all stacks, each factor.

    A group is one reference run and the runs paired with it (pairs sharing their first run):
    within a group only the factor changes. Factors whose runs have no verdicts (the torch
    MLP) have no set.
    """
    groups: dict[str, dict[str, list[str]]] = {}
    kinds = store.kinds(dataset)
    for p in store.pairs(dataset):
        f = factors.get(p.factor)
        # `host` pairs (kit compare) can be torch runs: the runs themselves decide
        if f is None or not f.has_verdicts or "torch" in (kinds.get(p.a), kinds.get(p.b)):
            continue
        groups.setdefault(p.factor, {}).setdefault(p.a, [p.a]).append(p.b)
    sets: dict[str, list[list[str]]] = {}
    if "seed" in groups:
        sets["seeds"] = list(groups["seed"].values())
    stacks = [g for name in factors.names(factors.STACKS) for g in groups.get(name, {}).values()]
    if stacks:
        sets["stacks"] = stacks
    # the seed factor's set is "seeds" (named first, as the paper's yardstick): not twice
    sets.update({name: list(g.values()) for name, g in groups.items() if name != "seed"})
    return sets


def stability_report(
    store: Store, dataset: str, only: str | None = None
) -> dict[str, list[Verdict]]:
    """What `kit verdicts` shows: per set, the stability of each of the twelve verdicts."""
    sets = verdict_sets(store, dataset)
    if only:
        only = "seeds" if only == "seed" else only  # the factor's name finds its set
        if only not in sets:
            raise KitError(
                unknown("no run set", only, sets, f"; sets here: {', '.join(sets) or 'none'}")
            )
        sets = {only: sets[only]}
    labels = {i: run_label(s) for i, s in store.specs(dataset).items()}
    out = {name: stability(store, groups, labels) for name, groups in sets.items()}
    return {name: rows for name, rows in out.items() if rows}


def arrays_note(store: Store, dataset: str) -> str | None:
    """One line naming the runs `kit verdicts` leaves out for want of their arrays, or None."""
    runs = [r for groups in verdict_sets(store, dataset).values() for g in groups for r in g]
    missing = without_arrays(store, runs)
    if not missing:
        return None
    return (
        f"{len(missing)} run(s) left out ({', '.join(r[:12] for r in missing[:3])}"
        + (", ..." if len(missing) > 3 else "")
        + "): imported without their arrays, so "
        "their verdicts cannot be recomputed here; `kit export --arrays` on the other "
        "machine, then `kit import`, brings them"
    )


# a pipeline's verdicts: its probabilities outputs (as its KINDS declare them) against its truth


class Unfit(Exception):
    """A run whose outputs cannot be scored (one line: which output, which shapes)."""


def models_and_truth(kinds: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """(the ``probabilities`` outputs of ``kinds`` (a subject's declared output kinds), in their
    order; the ``truth`` output or None)."""
    truth = [k for k, v in kinds.items() if v == "truth"]
    return tuple(k for k, v in kinds.items() if v == "probabilities"), (truth[0] if truth else None)


MULTICLASS = ("acc", "bacc")  # k > 2 classes: accuracy and balanced accuracy (mean recall)


def scores(
    store: Store, run: str, models: Sequence[str], truth: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(probabilities as 1-d arrays of the positive class, truth as 0/1) of one run; Unfit
    naming the output when a shape cannot be scored against the truth."""
    y = store.array(run, truth)
    if y.ndim != 1 or not np.isin(np.unique(y), (0, 1)).all():
        raise Unfit(
            f"{truth} (truth) holds {len(np.unique(y))} classes: verdicts score a "
            f"0/1 truth (two classes)"
        )
    probs = {}
    for m in models:
        p = positive_class(store.array(run, m))  # predict_proba of two classes: column 1
        if p is None or len(p) != len(y):
            raise Unfit(
                f"{m} (probabilities) has shape {list(store.array(run, m).shape)} but "
                f"{truth} (truth) has shape {list(y.shape)}: a model's probabilities "
                f"are one per truth row (or n x 2)"
            )
        probs[m] = p
    return probs, y.astype(np.int64)


def _regression(y: np.ndarray) -> bool:
    """A float truth that is not whole numbers: a regression target, not class labels."""
    return y.dtype.kind == "f" and not np.all(np.isfinite(y) & (y == np.round(y)))


def class_predictions(
    store: Store, run: str, models: Sequence[str], truth: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """({model: the class each row predicts}, truth) of a run whose truth holds k > 2 classes.

    A model's probabilities are n x k, one column per class as scikit-learn's ``classes_``
    orders them: with whole-number labels 0..k-1, column j is class j (a test set may lack a
    class the model was trained on, so k may exceed the classes present); otherwise the
    columns are the truth's sorted classes, which must then be all present."""
    y = store.array(run, truth)
    if _regression(y):
        raise Unfit(
            f"{truth} (truth) holds non-integer values (a regression target): verdicts "
            f'score class labels; declare the predictions an "array" output and the '
            f"budget compares them"
        )
    classes = np.unique(y)
    whole = y.dtype.kind in "iubf" and classes.min() >= 0  # labels 0..k-1 name their columns
    preds = {}
    for m in models:
        p = store.array(run, m)
        if p.ndim != 2 or len(p) != len(y):
            raise Unfit(
                f"{m} (probabilities) has shape {list(p.shape)} but {truth} (truth) "
                f"holds {len(classes)} classes over {len(y)} rows: a model's "
                f"probabilities are n x k, one column per class"
            )
        if whole and p.shape[1] > classes.max():
            labels = np.arange(p.shape[1])
        elif p.shape[1] == len(classes):
            labels = classes
        else:
            raise Unfit(
                f"{m} (probabilities) has {p.shape[1]} columns but {truth} (truth) "
                f"holds {len(classes)} classes: columns are the classes in sorted order"
            )
        preds[m] = labels[np.argmax(p, axis=1)]
    return preds, y


def class_bootstrap(
    preds: Mapping[str, np.ndarray],
    y: np.ndarray,
    models: Sequence[str],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Verdicts:
    """The verdicts of k > 2 classes, as bootstrap's for two: for every pair of models, the
    accuracy and the balanced accuracy (the mean of each class's recall, so a rare class
    counts as much as a common one) under the same paired resamples of the test rows."""
    Wc = _by_case(len(y), resamples, seed)
    ones = np.ones((len(y), 1))
    member = np.stack([y == c for c in np.unique(y)]).astype(np.float64)  # classes x rows
    sizes, sizes_boot = member @ ones, member @ Wc
    stats: dict[str, dict[str, Any]] = {}
    for m in models:
        correct = (preds[m] == y).astype(np.float64)
        hit = member * correct

        def balanced(n_hit: np.ndarray, n: np.ndarray) -> Any:  # a class no draw has: absent, not 0
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.nanmean(np.where(n > 0, n_hit / n, np.nan), axis=0)

        stats[m] = {
            "acc": (correct @ ones / len(y))[0],
            "acc_boot": correct @ Wc / len(y),
            "bacc": balanced(hit @ ones, sizes)[0],
            "bacc_boot": balanced(hit @ Wc, sizes_boot),
        }
    out: Verdicts = {}
    q = [(1 - LEVEL) / 2 * 100, (1 + LEVEL) / 2 * 100]
    for a, b in combinations(models, 2):
        for metric in MULTICLASS:
            d = stats[b][metric + "_boot"] - stats[a][metric + "_boot"]
            lo, hi = np.nanpercentile(d, q)
            out[f"{b}-{a} {metric}"] = {
                "diff": float(stats[b][metric] - stats[a][metric]),
                "lo": float(lo),
                "hi": float(hi),
                "verdict": ">" if lo > 0 else "<" if hi < 0 else "=",
            }
    out["_scores"] = {
        m: {"acc": float(stats[m]["acc"]), "bacc": float(stats[m]["bacc"])} for m in models
    }
    return out


def _two_classes(store: Store, run: str, truth: str) -> bool:
    y = store.array(run, truth)
    return y.ndim == 1 and bool(np.isin(np.unique(y), (0, 1)).all())


def _per_run(store: Store, run: str, models: Sequence[str], truth: str) -> Verdicts:
    if not _two_classes(store, run, truth):
        preds, y = class_predictions(store, run, models, truth)
        if len(models) == 1:
            return {"_scores": {models[0]: {"acc": float(np.mean(preds[models[0]] == y))}}}
        return class_bootstrap(preds, y, models)
    probs, y = scores(store, run, models, truth)
    if len(models) == 1:
        m = models[0]
        return {"_scores": {m: {"acc": float(np.mean((probs[m] > THRESHOLD) == y))}}}
    return bootstrap(probs, y, models=models)


def _one_line_per_cause(found: list[tuple[str, str]]) -> list[str]:
    """[(run, cause)] as one line per cause, naming how many runs and the first few, so a
    cause every run shares (a 10-class truth) is one line, not one per run."""
    by: dict[str, list[str]] = {}
    for run, cause in found:
        by.setdefault(cause, []).append(run[:12])
    return [
        (
            f"run {runs[0]}: {cause}"
            if len(runs) == 1
            else f"{len(runs)} runs ({', '.join(runs[:3])}{', ...' if len(runs) > 3 else ''}): "
            f"{cause}"
        )
        for cause, runs in by.items()
    ]


def output_verdicts(store: Store, subject: Subject) -> dict[str, Any]:
    """Per factor of pipeline ``subject``: with two or more models, each verdict ("b-a acc|auc"
    for a 0/1 truth, "b-a acc|bacc" for k classes: >, < or =) per run and in how many of the
    factor's pairs it changes; with one model, its accuracy per run and the spread across the
    factor's runs. ``why``: why there are none; ``unfit``: runs whose outputs cannot be
    scored, one line per cause."""
    models, truth = models_and_truth(subject.kinds)
    out: dict[str, Any] = {
        "pipeline": subject.sha256,
        "name": subject.name,
        "models": list(models),
        "truth": truth,
        "factors": {},
        "unfit": [],
        "why": "",
    }
    if truth is None or not models:
        out["why"] = (
            f"{subject.name} declares no {'truth' if truth is None else 'probabilities'}"
            f' output: verdicts need KINDS with a "truth" output and at least one '
            f'"probabilities" output'
        )
        return out
    per_run: dict[str, Verdicts | None] = {}

    def verdicts_of(run: str) -> Verdicts | None:
        if run not in per_run:
            try:
                per_run[run] = _per_run(store, run, models, truth)
            except Unfit as e:
                per_run[run] = None
                causes.append((run, str(e)))
        return per_run[run]

    causes: list[tuple[str, str]] = []
    out["unfit"] += unfit(store, subject).values()
    for factor, a, b in pairs(store, subject):
        va, vb = verdicts_of(a), verdicts_of(b)
        if va is None or vb is None:
            continue
        f = out["factors"].setdefault(
            factor, {"pairs": 0, "runs": [], "verdicts": {}, "accuracy": {}}
        )
        f["pairs"] += 1
        for r, v in ((a, va), (b, vb)):
            if r not in f["runs"]:
                f["runs"].append(r)
                for m, s in v["_scores"].items():
                    f["accuracy"].setdefault(m, []).append(s["acc"])
        for key in (k for k in va if not k.startswith("_")):
            row = f["verdicts"].setdefault(
                key, {"per_run": {}, "diff": {}, "changed": 0, "models": _models_of(key, models)}
            )
            for r, v in ((a, va), (b, vb)):
                row["per_run"][r], row["diff"][r] = v[key]["verdict"], v[key]["diff"]
            row["changed"] += va[key]["verdict"] != vb[key]["verdict"]
    for f in out["factors"].values():
        f["spread"] = {
            m: {
                "runs": len(acc),
                "min": min(acc),
                "max": max(acc),
                "sd": float(np.std(acc, ddof=1)) if len(acc) > 1 else 0.0,
            }
            for m, acc in f["accuracy"].items()
        }
        for row in f["verdicts"].values():
            counts = {v: list(row["per_run"].values()).count(v) for v in (">", "<", "=")}
            row.update(counts=counts, stable=row["changed"] == 0)
    out["unfit"] += _one_line_per_cause(causes)
    return out


def _models_of(key: str, models: Sequence[str]) -> list[str]:
    """[b, a] of the verdict "b-a metric" (an output's name may hold a "-" itself)."""
    pair = key.rsplit(" ", 1)[0]
    return next([b, a] for b in models for a in models if f"{b}-{a}" == pair)
