"""Conclusions across two splits of one set of proteins: each model's accuracy and each verdict on
a random split beside a homology-disjoint one, judged against what a change of split alone gives.

Two splits test on different proteins, and a different split moves accuracy far more than a
model seed does (the paper's seed is the wrong yardstick here). The yardstick is the split
seed's own spread (`seed:split` runs of the random split's dataset): only a change beyond it is
attributed to homologs shared by train and test (docs/data.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.errors import KitError
from ..runs.store import Store
from .verdicts import Verdicts, run_verdicts, verdict_sets, without_arrays

# a change beyond LIMIT split units is more than a change of split gives; the unit is the SD of
# the change between two random splits (sqrt(2) x one split's SD), and its 95% interval from the
# split runs (chi-square on their degrees of freedom) decides where the call is "cannot tell"
LIMIT = 2.0
SPLIT_SEEDS = 10  # what `kit run --factor seed:split` runs by default: split seeds 0-9

HOMOLOGS, RESPLIT, UNSURE, NOTHING = ("homologs", "a re-split", "cannot tell", "no homologs")


@dataclass(frozen=True)
class SplitRow:
    """One model's accuracy, or one verdict's difference (b-a), on each split over its seed runs."""

    name: str
    a: float  # median over the seed runs of split a
    a_sd: float | None  # their spread (sample standard deviation); None with one run
    b: float
    b_sd: float | None
    split_sd: float | None = None  # its SD across the seed:split runs of a's dataset
    split_units: float | None = None  # (b - a) / (sqrt(2) x split_sd): a change of split's unit
    call: str = UNSURE  # HOMOLOGS, RESPLIT, UNSURE or NOTHING
    a_says: str = ""  # a verdict's majority call on each split (">", "<", "="), and in how
    b_says: str = ""  # many runs: "> 5/5"
    changed: bool = False


@dataclass(frozen=True)
class AcrossSplits:
    a: str  # the random split's dataset name
    b: str  # the homology-disjoint split's
    a_runs: int
    b_runs: int
    removed: int | None  # proteins the disjoint split removed (GraphPart), when it says
    method: str
    models: list[SplitRow]
    verdicts: list[SplitRow]
    yardstick: str = "seed:split"  # what a change is judged against
    split_runs: int = 0  # the seed:split runs of a's dataset read for it
    leaked: int | None = None  # test proteins of a with a train homolog (None: not measured)
    nothing: bool = False  # no homolog to remove and none removed: nothing to attribute
    needs: str = ""  # the command that makes (more) split runs, where they would decide

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _runs_here(store: Store, groups: list[list[str]]) -> list[str]:
    runs = list(dict.fromkeys(r for g in groups for r in g))
    return [r for r in runs if r not in set(without_arrays(store, runs))]


def _seed_runs(store: Store, sha: str, name: str, words: str = "") -> list[str]:
    runs = _runs_here(store, verdict_sets(store, sha).get("seeds") or [])
    if len(runs) < 2:
        raise KitError(
            f"{len(runs)} seed run(s) of {name} with their arrays: `kit run --factor "
            f"seed --dataset {words or name}` makes them (each split's median is "
            "over its seed runs)"
        )
    return runs


def _sd(xs: list[float]) -> float | None:
    return float(np.std(xs, ddof=1)) if len(xs) > 1 else None


def _bounds(sd: float, n: int) -> tuple[float, float]:
    """The 95% interval of a standard deviation measured on ``n`` values (chi-square)."""
    from scipy.stats import chi2

    df = n - 1
    return (
        float(sd * (df / chi2.ppf(0.975, df)) ** 0.5),
        float(sd * (df / chi2.ppf(0.025, df)) ** 0.5),
    )


def _call(change: float, split: list[float]) -> tuple[float | None, float | None, str]:
    """(split SD, change in split units, call) of a change b-a against ``split``: the values
    of the same measure across the random re-splits of a's dataset."""
    sd = _sd(split)
    if sd is None:
        return None, None, UNSURE
    unit = 2**0.5 * sd  # the SD of a change between two random splits
    lo, hi = _bounds(unit, len(split))
    units = change / unit if unit > 0 else None
    if abs(change) > LIMIT * hi:
        return sd, units, HOMOLOGS
    return sd, units, RESPLIT if abs(change) <= LIMIT * lo else UNSURE


def _row(
    name: str, a: list[float], b: list[float], split: list[float], nothing: bool, **kw: Any
) -> SplitRow:
    sd, units, call = _call(float(np.median(b) - np.median(a)), split)
    return SplitRow(
        name,
        float(np.median(a)),
        _sd(a),
        float(np.median(b)),
        _sd(b),
        sd,
        units,
        NOTHING if nothing else call,
        **kw,
    )


def _says(calls: list[str]) -> str:
    top = max((">", "<", "="), key=calls.count)
    return f"{top} {calls.count(top)}/{len(calls)}"


def leaked(summary: dict[str, Any], meta: dict[str, Any]) -> int | None:
    """How many test proteins of the dataset of ``summary`` have a train homolog: its stored
    clustering at the split's identity and coverage (and its stored leakage search, when run);
    0 where the split's own search found no edge at all; None when nothing measured it."""
    from ..data.homology import stored_clusterings
    from ..data.homology_edges import stored_hits_of

    sha, n, train = summary.get("sha256"), summary.get("rows"), summary.get("train")
    if not (isinstance(sha, str) and type(n) is int and type(train) is int):
        return None
    at = (meta.get("identity"), meta.get("coverage"))
    found = [c for c in stored_clusterings(sha, n, train) if (c.identity, c.coverage) == at]
    counts = [int(c.test_with_train_homolog.sum()) for c in found[:1]]
    if found:  # the clustering's own identity and coverage: the split's
        hits = stored_hits_of(sha, train, n - train, found[0].identity, found[0].coverage)
        counts += [int(hits[0].sum())] if hits is not None else []
    if not counts and meta.get("edge_count") == 0:
        counts = [0]
    return max(counts) if counts else None


def across_splits(store: Store, a: tuple[Any, ...], b: tuple[Any, ...]) -> AcrossSplits:
    """``a`` and ``b``: (sha256, name, summary[, how the command line names it]) of the random
    split and the homology-disjoint split of the same proteins (b's record names a as its
    source)."""
    (sa, na, summary, *wa), (sb, nb, meta, *wb) = a, b
    if meta.get("split") != "homology":
        raise KitError(
            f"{nb} is not a homology-disjoint split: make one with `kit data split "
            f"{(wa or [na])[0]} --homology --name NEW`"
        )
    if meta.get("source_dataset") != sa:
        raise KitError(
            f"{nb} is a homology split of {str(meta.get('source_name'))[:64]}, not of "
            f"{na}: compare a split with its own source"
        )
    ra, rb = _seed_runs(store, sa, na, *wa), _seed_runs(store, sb, nb, *wb)
    rs = _runs_here(store, verdict_sets(store, sa).get("seed:split") or [])
    va, vb, vs = ([run_verdicts(store, r) for r in runs] for runs in (ra, rb, rs))
    removed = meta.get("removed")
    removed = removed if type(removed) is int else None
    leak = leaked(dict(summary, sha256=sa), meta)
    nothing = leak == 0 and not removed
    models = sorted(set(va[0]["_scores"]) & set(vb[0]["_scores"]))

    def acc(runs: list[Verdicts], m: str) -> list[float]:
        return [v["_scores"][m]["acc"] for v in runs]

    rows = [_row(f"{m} accuracy", acc(va, m), acc(vb, m), acc(vs, m), nothing) for m in models]
    verdicts = []
    for key in [k for k in va[0] if k != "_scores" and k in vb[0]]:
        ca, cb = [v[key]["verdict"] for v in va], [v[key]["verdict"] for v in vb]
        sa_, sb_ = _says(ca), _says(cb)

        def diff(runs: list[Verdicts], key: str = key) -> list[float]:
            return [v[key]["diff"] for v in runs if key in v]

        verdicts.append(
            _row(
                key,
                diff(va),
                diff(vb),
                diff(vs),
                nothing,
                a_says=sa_,
                b_says=sb_,
                changed=sa_[0] != sb_[0],
            )
        )
    unsure = not nothing and any(r.call == UNSURE for r in rows + verdicts)
    more = max(SPLIT_SEEDS, 2 * len(rs))
    needs = (
        f"kit run --factor seed:split --dataset {(wa or [na])[0]} --seeds 0-{more - 1}"
        if unsure
        else ""
    )
    return AcrossSplits(
        na,
        nb,
        len(ra),
        len(rb),
        removed,
        str(meta.get("method", "clusters")),
        rows,
        verdicts,
        "seed:split",
        len(rs),
        leak,
        nothing,
        needs,
    )
