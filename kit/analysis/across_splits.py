"""Conclusions across two splits of one set of proteins: each model's accuracy and each verdict on
a random split beside a homology-disjoint one, in units of what a seed changes."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..core.errors import KitError
from ..runs.store import Store
from .verdicts import run_verdicts, verdict_sets, without_arrays


@dataclass(frozen=True)
class SplitRow:
    """One model's accuracy, or one verdict's difference (b-a), on each split over its seed runs."""
    name: str
    a: float             # median over the seed runs of split a
    a_sd: float | None   # their spread (sample standard deviation); None with one run
    b: float
    b_sd: float | None
    seed_units: float | None  # (b - a) / the two spreads pooled; None where seeds change nothing
    a_says: str = ""     # a verdict's majority call on each split (">", "<", "="), and in how
    b_says: str = ""     # many runs: "> 5/5"
    changed: bool = False


@dataclass(frozen=True)
class AcrossSplits:
    a: str               # the random split's dataset name
    b: str               # the homology-disjoint split's
    a_runs: int
    b_runs: int
    removed: int | None  # proteins the disjoint split removed (GraphPart), when it says
    method: str
    models: list
    verdicts: list

    def to_json(self) -> dict:
        return asdict(self)


def _seed_runs(store: Store, sha: str, name: str, words: str = "") -> list:
    groups = verdict_sets(store, sha).get("seeds") or []
    runs = list(dict.fromkeys(r for g in groups for r in g))
    runs = [r for r in runs if r not in set(without_arrays(store, runs))]
    if len(runs) < 2:
        raise KitError(f"{len(runs)} seed run(s) of {name} with their arrays: `kit run --factor "
                       f"seed --dataset {words or name}` makes them (a seed's spread is the unit "
                       "here)")
    return runs


def _sd(xs: list) -> float | None:
    return float(np.std(xs, ddof=1)) if len(xs) > 1 else None


def _units(a: list, b: list) -> float | None:
    sa, sb = _sd(a) or 0.0, _sd(b) or 0.0
    pooled = ((sa ** 2 + sb ** 2) / 2) ** 0.5
    return float((np.median(b) - np.median(a)) / pooled) if pooled > 0 else None


def _row(name: str, a: list, b: list, **kw) -> SplitRow:
    return SplitRow(name, float(np.median(a)), _sd(a), float(np.median(b)), _sd(b), _units(a, b),
                    **kw)


def _says(calls: list) -> str:
    top = max((">", "<", "="), key=calls.count)
    return f"{top} {calls.count(top)}/{len(calls)}"


def across_splits(store: Store, a: tuple, b: tuple) -> AcrossSplits:
    """``a`` and ``b``: (sha256, name, summary[, how the command line names it]) of the random
    split and the homology-disjoint split of the same proteins (b's record names a as its
    source)."""
    (sa, na, _, *wa), (sb, nb, meta, *wb) = a, b
    if meta.get("split") != "homology":
        raise KitError(f"{nb} is not a homology-disjoint split: make one with `kit data split "
                       f"{(wa or [na])[0]} --homology --name NEW`")
    if meta.get("source_dataset") != sa:
        raise KitError(f"{nb} is a homology split of {str(meta.get('source_name'))[:64]}, not of "
                       f"{na}: compare a split with its own source")
    ra, rb = _seed_runs(store, sa, na, *wa), _seed_runs(store, sb, nb, *wb)
    va = [run_verdicts(store, r) for r in ra]
    vb = [run_verdicts(store, r) for r in rb]
    models = sorted(set(va[0]["_scores"]) & set(vb[0]["_scores"]))
    rows = [_row(f"{m} accuracy", [v["_scores"][m]["acc"] for v in va],
                 [v["_scores"][m]["acc"] for v in vb]) for m in models]
    verdicts = []
    for key in [k for k in va[0] if k != "_scores" and k in vb[0]]:
        ca, cb = [v[key]["verdict"] for v in va], [v[key]["verdict"] for v in vb]
        sa_, sb_ = _says(ca), _says(cb)
        verdicts.append(_row(key, [v[key]["diff"] for v in va], [v[key]["diff"] for v in vb],
                             a_says=sa_, b_says=sb_, changed=sa_[0] != sb_[0]))
    removed = meta.get("removed")
    return AcrossSplits(na, nb, len(ra), len(rb), removed if type(removed) is int else None,
                        str(meta.get("method", "clusters")), rows, verdicts)
