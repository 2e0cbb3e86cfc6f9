"""What advice says of the explanations `kit explain` stored: which release to pin below, or
which stage's cause to pin, each figure read from the stored runs."""

from __future__ import annotations

from typing import Any

from ..core.numbers import fmt
from ..envs.releases import key
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .explain import PairExplanation, StageOrigin
from .explain_stored import StoredExplanation, stored_explanations

_NAMES = {
    "kmer": "the 3-mer counts",
    "tfidf": "TF-IDF",
    "svd_rand": "the randomized SVD",
    "svd_arpack": "the ARPACK SVD",
    "kmeans": "k-means",
    "knn": "the neighbours",
    "lr": "logistic regression",
    "mlp": "the MLP",
    "hgb": "gradient boosting",
    "rf": "the random forest",
}


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def kept_until(o: StageOrigin, base: str) -> str | None:
    """The release from which a stage's output stays off its ``base`` release's output (the
    first change that never goes back to it); None: the last release scanned gives base's."""
    at = None
    for v in o.changes_at:
        at = None if o.back_to.get(v) == base else at or v
    return at


def _cost(m: str, flips: int, yardstick: dict[str, Any] | None) -> tuple[str, float | None]:
    """('58 flips, 0.8 seed units', seed units or None) of one model's flips in the pair."""
    unit = ((yardstick or {}).get("flips") or {}).get(m)
    su = flips / unit if unit else None
    return (
        f"{flips} flip{'s' if flips != 1 else ''}"
        + (f", {fmt(su)} seed units" if su is not None else "")
    ), su


def _pins(
    x: StoredExplanation, e: PairExplanation, yardstick: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """One recommendation per release at which models' originating outputs change for good."""
    rows = [r for r in e.releases if r["status"] == "built"]
    if len(rows) < 2:
        return []
    base, last = rows[0]["version"], rows[-1]["version"]
    word = "below" if key(last) > key(base) else "above"
    at: dict[str, list[tuple[str, int]]] = {}
    for m in MODELS:
        o = e.stages.get(m)
        if o and o.origin == "originates" and o.flips:
            r = kept_until(o, base)
            if r:
                at.setdefault(r, []).append((m, o.flips))
    out = []
    for r, moved in sorted(at.items(), key=lambda kv: [x["version"] for x in rows].index(kv[0])):
        costs = {m: _cost(m, f, yardstick) for m, f in moved}
        text = (
            f"Pin {e.library} {word} {r} to keep {_and([_NAMES[m] for m, _ in moved])}'s "
            f"results of {e.library} {base}, or accept the change ("
            + "; ".join((f"{_NAMES[m]} " if len(moved) > 1 else "") + costs[m][0] for m, _ in moved)
            + f"); in {x['factor']} pair {e.label} the change comes at {r} on identical "
            "inputs (kit explain's release scan)."
        )
        out.append(
            {
                "kind": "explain",
                "text": text,
                "basis": {
                    "factor": x["factor"],
                    "pair": [e.a, e.b],
                    "library": e.library,
                    "release": r,
                    "from": base,
                    "models": {m: {"flips": f, "seed_units": costs[m][1]} for m, f in moved},
                },
            }
        )
    return out


def _starts(x: StoredExplanation) -> list[dict[str, Any]]:
    """Where a factor's stages only inherit: the stage the difference starts in, once per
    distinct reading over its explained pairs."""
    seen: dict[tuple[str, tuple[str, ...]], list[PairExplanation]] = {}
    for e in x["pairs"]:
        inherited = tuple(s for s, o in e.stages.items() if o.origin == "inherited")
        if e.first_origin and inherited:
            seen.setdefault((e.first_origin, inherited), []).append(e)
    out = []
    for (first, inherited), es in seen.items():
        n = len(x["pairs"]) + len(x["missing"])
        text = (
            f"{x['factor']}: the difference starts at {_NAMES[first]}, which differs on "
            f"identical inputs; {_and([_NAMES[s] for s in inherited])} only inherit it "
            f"(in {len(es)} of {n} pair(s), cross-fed runs): pin what changes "
            f"{_NAMES[first]}."
        )
        out.append(
            {
                "kind": "explain",
                "text": text,
                "basis": {
                    "factor": x["factor"],
                    "first_origin": first,
                    "inherited": list(inherited),
                    "pairs": len(es),
                    "of": n,
                },
            }
        )
    return out


def recommendations(store: Store, dataset: str, b: dict[str, Any]) -> list[dict[str, Any]]:
    """Advice from the stored explanations ([] when `kit explain` stored none)."""
    out: list[dict[str, Any]] = []
    for x in stored_explanations(store, dataset, b["rows"]):
        for e in x["pairs"]:
            if e.library:
                out += _pins(x, e, b.get("yardstick"))
        out += _starts(x)
    return out
