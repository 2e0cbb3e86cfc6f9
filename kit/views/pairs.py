"""One pair in cells, shared by `kit budget --factor`, the report and the TUI's pair view."""

from __future__ import annotations

from ..analysis.compare import DIGIT_STAGES
from ..core.numbers import fmt
from .fit import para, table
from .tables import DIFFERENT_TEST, SHORT_STAGES, digits_cell, factor_label


def pair_cells(p: dict) -> dict:
    """The cells of one pair, shared by `kit budget --factor`, the report and the TUI."""
    c = p["comparison"]
    if c.different_test:  # seed:split: the two runs predicted different proteins
        return {"pair": p["label"], "identical": DIFFERENT_TEST, "emb diff": "-", "digits": "-",
                "ARI": "-", "Jaccard": "-", "flips": "-", "confounds": "-"}
    return {"pair": p["label"], "identical": f"{sum(c.identical.values())}/{len(c.identical)}",
            "emb diff": fmt(c.used.rel_fro if c.used else None),  # the embedding the models used
            "digits": digits_cell(c.digits.get(c.embedding, {}).get("digits")),
            "ARI": fmt(c.kmeans_ari), "Jaccard": fmt(c.knn_jaccard),
            "flips": " ".join(f"{m}:{v.flips}" for m, v in c.models.items()) or "-",
            "confounds": "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in p["confounds"].items()) or "-"}


def pairs_text(rows: list) -> str:
    cells = [pair_cells(p) for p in rows]
    head = ["pair", "identical", "emb diff", "digits", "ARI", "Jaccard", "flips", "confounds"]
    out = [table([[factor_label(p["factor"], p["level"])] + [c[h] for h in head]
                  for p, c in zip(rows, cells)], ["factor"] + head, wrap=(1, 7, 8))]
    stages = [s for s in DIGIT_STAGES if any(s in p["comparison"].digits for p in rows)]
    if stages:
        digits = [[p["label"]] + [digits_cell((p["comparison"].digits.get(s) or {}).get("digits"))
                                  for s in stages] for p in rows]
        out += ["", para("Significant digits on which the two runs agree, per stage (the median "
                         "over each stage's numbers; float64 keeps 15.7, float32 6.9)"),
                table(digits, ["pair"] + [SHORT_STAGES.get(s, s) for s in stages], wrap=(0,))]
    return "\n".join(out)
