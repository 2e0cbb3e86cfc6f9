"""What the report shows, computed once from the store: budget, advice, verdicts, environments."""

from __future__ import annotations

from ..analysis.advice import advise
from ..analysis.budget import budget, pair_details
from ..analysis.explain_stored import stored_explanations
from ..analysis.verdicts import stability_report
from ..runs.store import Store


def findings(store: Store, dataset: str) -> dict:
    """The budget, the advice on it, each power-iteration level's (and the converged solver's)
    comparisons, verdict stability, every run's stack and measured environment, and the
    explanations `kit explain` stored (none: [])."""
    b = budget(store, dataset)
    a = advise(store, dataset, b)
    per_level = {}
    for f in ("svd-iters", "svd-solver"):
        for p in pair_details(store, dataset, f):
            per_level.setdefault(p["level"] or f, []).append(p["comparison"])
    return {"budget": b, "advice": a, "per_level": per_level,
            "verdicts": stability_report(store, dataset),
            "explained": stored_explanations(store, dataset, b["rows"]),
            # every measured environment once (explain's cross-fed runs are none of their own)
            "runs": [(r.spec.stack, r.manifest["env"]) for r in store.runs(dataset)
                     if r.spec.kind != "feed"]}
