"""Conclusions across two splits of one set of proteins: each model's accuracy and each verdict on
a random split beside a homology-disjoint one, judged against what a change of split alone gives.

Two splits test on different proteins, and a different split moves accuracy far more than a
model seed does (the paper's seed is the wrong yardstick here). The yardstick is the split
seed's own spread (`seed:split` runs of the random split's dataset), or, paired, random
re-splits of the disjoint split's own proteins at its own sizes (`seed:split` runs of its
dataset: its removed proteins left out): only a change beyond it is attributed to homologs
shared by train and test (docs/data.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
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
# an accuracy that rose beyond the spread on the disjoint split: homologs shared by train and test
# only ever help the random split, so what raised it is something else the split changed
RISE = "a rise"
SPLIT, PAIRED = "seed:split", "paired"  # the yardsticks: the random split's re-splits, or b's own


@dataclass(frozen=True)
class SplitRow:
    """One model's accuracy, or one verdict's difference (b-a), on each split over its seed runs."""

    name: str
    a: float  # median over the seed runs of split a (paired: mean over b's random re-splits)
    a_sd: float | None  # their spread (sample standard deviation); None with one run
    b: float
    b_sd: float | None
    split_sd: float | None = None  # its SD across the seed:split runs of the yardstick's dataset
    # (b - a) in the SD of such a change between random splits: sqrt(2) x split_sd between two
    # (seed:split), sqrt(1 + 1/k) x split_sd between one and the mean of k (paired)
    split_units: float | None = None
    call: str = UNSURE  # HOMOLOGS, RESPLIT, UNSURE, NOTHING or (an accuracy) RISE
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
    yardstick: str = SPLIT  # what a change is judged against: SPLIT or PAIRED
    split_runs: int = 0  # the seed:split runs read for it (of a's dataset; paired: of b's)
    leaked: int | None = None  # test proteins of a with a train homolog (None: not measured)
    nothing: bool = False  # no homolog to remove and none removed: nothing to attribute
    needs: str = ""  # the command that makes (more) split runs, where they would decide
    edges: int | None = None  # the pairs b's own search found (GraphPart); 0: it separated none
    sizes: tuple[int, int] | None = (
        None  # b's train and test proteins (the paired re-splits' sizes)
    )

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


def _call(
    change: float, split: list[float], paired: bool = False
) -> tuple[float | None, float | None, str]:
    """(split SD, change in split units, call) of a change b-a against ``split``: the values
    of the same measure across random re-splits (of a's dataset; paired: of b's, and a is
    their mean)."""
    sd = _sd(split)
    if sd is None:
        return None, None, UNSURE
    # the SD of a change between two random splits, or between one and the mean of k of them
    unit = (1 + 1 / len(split)) ** 0.5 * sd if paired else 2**0.5 * sd
    lo, hi = _bounds(unit, len(split))
    units = change / unit if unit > 0 else None
    if abs(change) > LIMIT * hi:
        return sd, units, HOMOLOGS
    return sd, units, RESPLIT if abs(change) <= LIMIT * lo else UNSURE


def _row(
    name: str,
    a: list[float],
    b: list[float],
    split: list[float],
    nothing: bool,
    paired: bool,
    **kw: Any,
) -> SplitRow:
    centre = float(np.mean(a) if paired else np.median(a))
    change = float(np.median(b)) - centre
    # a change of a few ulps is no change: said as 0, never as -1.11e-16
    change = 0.0 if abs(change) <= 1e-12 * max(1.0, abs(centre)) else change
    sd, units, call = _call(change, split, paired)
    return SplitRow(
        name,
        centre,
        _sd(a),
        centre + change,
        _sd(b),
        sd,
        units,
        NOTHING if nothing else call,
        **kw,
    )


def _risen(r: SplitRow) -> SplitRow:
    """An accuracy beyond the spread is homologs' only where it fell on the disjoint split (a
    verdict's b-a difference may move either way)."""
    return replace(r, call=RISE) if r.call == HOMOLOGS and r.b > r.a else r


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


def across_splits(
    store: Store,
    a: tuple[Any, ...],
    b: tuple[Any, ...],
    paired: bool = False,
    sizes: tuple[int, int] | None = None,
) -> AcrossSplits:
    """``a`` and ``b``: (sha256, name, summary[, how the command line names it]) of the random
    split and the homology-disjoint split of the same proteins (b's record names a as its
    source). ``paired``: b is judged against random re-splits of its own proteins at its own
    ``sizes`` (train, test) instead of against a: the seed:split runs of b's dataset."""
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
    rb = _seed_runs(store, sb, nb, *wb)
    # the yardstick's runs: re-splits of a's proteins, or (paired) of b's own, at b's sizes
    of, named = (sb, (wb or [nb])[0]) if paired else (sa, (wa or [na])[0])
    rs = _runs_here(store, verdict_sets(store, of).get("seed:split") or [])
    if paired and not rs:
        raise KitError(
            f"no seed:split runs of {nb} with their arrays: the paired yardstick is random "
            f"re-splits of its own proteins at its own sizes, which `kit run --factor "
            f"seed:split --dataset {named}` makes (split seeds 0-{SPLIT_SEEDS - 1})"
        )
    ra = rs if paired else _seed_runs(store, sa, na, *wa)
    va, vb, vs = ([run_verdicts(store, r) for r in runs] for runs in (ra, rb, rs))
    removed = meta.get("removed")
    removed = removed if type(removed) is int else None
    edges = meta.get("edge_count")
    edges = edges if type(edges) is int else None
    leak = leaked(dict(summary, sha256=sa), meta)
    # nothing to attribute: no test protein of a has a train homolog, or b's own search found
    # no pair at all (so b separated nothing, whatever a clustering says), and none removed
    nothing = (leak == 0 or edges == 0) and not removed
    models = sorted(set(va[0]["_scores"]) & set(vb[0]["_scores"]))

    def acc(runs: list[Verdicts], m: str) -> list[float]:
        return [v["_scores"][m]["acc"] for v in runs]

    rows = [
        _risen(_row(f"{m} accuracy", acc(va, m), acc(vb, m), acc(vs, m), nothing, paired))
        for m in models
    ]
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
                paired,
                a_says=sa_,
                b_says=sb_,
                changed=sa_[0] != sb_[0],
            )
        )
    unsure = not nothing and any(r.call == UNSURE for r in rows + verdicts)
    more = max(SPLIT_SEEDS, 2 * len(rs))
    needs = f"kit run --factor seed:split --dataset {named} --seeds 0-{more - 1}" if unsure else ""
    return AcrossSplits(
        na,
        nb,
        len(ra),
        len(rb),
        removed,
        str(meta.get("method", "clusters")),
        rows,
        verdicts,
        PAIRED if paired else SPLIT,
        len(rs),
        leak,
        nothing,
        needs,
        edges,
        (sizes[0], sizes[1]) if sizes else None,
    )
