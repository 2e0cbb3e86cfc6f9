"""What a homology summary means, in the words advice, tables and the TUI share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .records import HomologySummary

MIN_SIDE = 20  # test proteins on each side before advice compares their accuracies


def narrow(h: HomologySummary) -> str:
    """How the protein bootstrap's intervals compare with the cluster bootstrap's here."""
    if h.too_narrow is None:
        return "the interval widths could not be compared"
    if h.too_narrow > 1:
        return (
            f"the protein bootstrap on these proteins is {h.too_narrow:.2f}x too narrow "
            "(median cluster/protein interval width)"
        )
    return (
        "the cluster bootstrap is no wider than the protein bootstrap here (median width "
        f"ratio {h.too_narrow:.2f})"
    )


def resting(h: HomologySummary) -> str:
    """How many conclusions rest on homologs: significant when proteins are resampled, not
    when clusters are; and any that turn significant only under clusters (read with care)."""
    out = (
        f"{h.rest_on_homologs} of the {len(h.verdicts)} verdicts "
        f"rest{'s' if h.rest_on_homologs == 1 else ''} on homologs "
        f"(significant under the protein bootstrap, not under the cluster bootstrap, in some "
        f"of {h.runs} runs)"
        if h.rest_on_homologs
        else f"no significant verdict is lost under the cluster bootstrap in {h.runs} runs"
    )
    if h.significant_only_under_clusters:
        k = h.significant_only_under_clusters
        out += (
            f"; {k} turn{'s' if k == 1 else ''} significant only under clusters "
            "(read those with care)"
        )
    return out


def counts(h: HomologySummary) -> str:
    """'245 test proteins with a train homolog and 155 without' (medians over the runs, with
    their ranges where the runs' test sets differ: re-splits)."""

    def spread(r: Sequence[float] | None) -> str:
        return f" ({int(r[0]):,}-{int(r[1]):,} over the runs)" if r and r[0] != r[1] else ""

    return (
        f"{h.n_with_homolog:,} test proteins with a train homolog{spread(h.n_with_homolog_range)}"
        f" and {h.n_without_homolog:,} without{spread(h.n_without_homolog_range)}"
    )


def recommendations(h: HomologySummary | None) -> list[dict[str, Any]]:
    """What advice says of homology: how much too narrow the protein bootstrap is here, how
    many verdicts rest on homologs, and how far accuracy leans on test proteins with a train
    homolog (the leakage a homology-disjoint split removes), each figure with its n."""
    if h is None or not h.runs:
        return []
    c = h.clustering
    at = (
        f"MMseqs2 clusters at {c.get('identity', 0):.0%} identity, "
        f"{c.get('coverage', 0):.0%} coverage; {counts(h)}"
    )
    gaps = {
        m: x.acc_with_homolog - x.acc_without_homolog
        for m, x in h.models.items()
        if x.acc_with_homolog is not None and x.acc_without_homolog is not None
    }
    lean = ""
    small = min(h.n_with_homolog, h.n_without_homolog)
    if gaps and small < MIN_SIDE:  # an accuracy on a handful of proteins says nothing
        lean = (
            f"; too few test proteins on one side ({small:,}) to compare accuracy with and "
            "without a train homolog"
        )
    elif gaps:
        m = max(gaps, key=lambda k: abs(gaps[k]))
        x = h.models[m]
        lean = (
            f"; {m} scores {x.acc_with_homolog:.3f} on the {h.n_with_homolog:,} with a "
            f"train homolog and {x.acc_without_homolog:.3f} on the {h.n_without_homolog:,} "
            "without (medians)"
        )
    text = (
        f"Homology ({at}): {narrow(h)}; {resting(h)}{lean}. Report cluster-bootstrap "
        "intervals, and see how the accuracies move on a homology-disjoint split "
        "(kit data split NAME --homology --name NEW)."
    )
    return [
        {
            "kind": "homology",
            "text": text,
            "basis": {
                "too_narrow": h.too_narrow,
                "rest_on_homologs": h.rest_on_homologs,
                "significant_only_under_clusters": h.significant_only_under_clusters,
                "runs": h.runs,
                "acc_gap": gaps,
                "n_with_homolog": h.n_with_homolog,
                "n_without_homolog": h.n_without_homolog,
                **{k: c.get(k) for k in ("identity", "coverage", "test_with_train_homolog")},
            },
        }
    ]
