"""One pair in cells, shared by `kit budget --factor`, the report and the TUI's pair view."""

from __future__ import annotations

from ..analysis.compare import DIGIT_STAGES
from ..core.numbers import fmt
from ..core.subject import pipeline_head
from .fit import para, table
from .tables import DIFFERENT_TEST, SHORT_STAGES, digits_cell, factor_label


def pair_cells(p: dict) -> dict:
    """The cells of one pair, shared by `kit budget --factor`, the report and the TUI."""
    c = p["comparison"]
    if c.different_test:  # seed:split: the two runs predicted different proteins
        return {
            "pair": p["label"],
            "identical": DIFFERENT_TEST,
            "emb diff": "-",
            "digits": "-",
            "ARI": "-",
            "Jaccard": "-",
            "flips": "-",
            "confounds": "-",
        }
    return {
        "pair": p["label"],
        "identical": f"{sum(c.identical.values())}/{len(c.identical)}",
        "emb diff": fmt(c.used.rel_fro if c.used else None),  # the embedding the models used
        "digits": digits_cell(c.digits.get(c.embedding, {}).get("digits")),
        "ARI": fmt(c.kmeans_ari),
        "Jaccard": fmt(c.knn_jaccard),
        "flips": " ".join(f"{m}:{v.flips}" for m, v in c.models.items()) or "-",
        "confounds": "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in p["confounds"].items()) or "-",
    }


def pairs_text(rows: list) -> str:
    cells = [pair_cells(p) for p in rows]
    head = ["pair", "identical", "emb diff", "digits", "ARI", "Jaccard", "flips", "confounds"]
    out = [
        table(
            [
                [factor_label(p["factor"], p["level"])] + [c[h] for h in head]
                for p, c in zip(rows, cells, strict=True)
            ],
            ["factor"] + head,
            wrap=(1, 7, 8),
        )
    ]
    stages = [s for s in DIGIT_STAGES if any(s in p["comparison"].digits for p in rows)]
    if stages:
        digits = [
            [p["label"]]
            + [digits_cell((p["comparison"].digits.get(s) or {}).get("digits")) for s in stages]
            for p in rows
        ]
        out += [
            "",
            para(
                "Significant digits on which the two runs agree, per stage (the median "
                "over each stage's numbers; float64 keeps 15.7, float32 6.9)"
            ),
            table(digits, ["pair"] + [SHORT_STAGES.get(s, s) for s in stages], wrap=(0,)),
        ]
    return "\n".join(out)


# a pair's one number per output, the first its kind measures: (key, the header's word)
_HEADLINE = (
    ("flips", "flips"),
    ("ari", "ARI"),
    ("jaccard", "Jaccard"),
    ("changed", "changed"),
    ("rel", "rel"),
)


def _cell(d: dict | None, key: str | None) -> str:
    """One output of one pair: its headline measure, "=" when bitwise identical."""
    if d is None or d["identical"]:
        return "-" if d is None else "="
    if "missing" in d:
        return f"in run {'b' if d['missing'] == 'a' else 'a'} only"
    if "shape" in d or "unmeasured" in d:
        return "shape differs" if "shape" in d else "bits differ"
    if key not in d:
        return "differs"
    return str(d[key]) if key in ("flips", "changed") else fmt(d[key])


def output_pairs_text(name: str, sha: str, factor: str, rows: list) -> str:
    """`kit budget --pipeline FILE --factor F`: the pairs behind F's row, one line each."""
    outputs = list(dict.fromkeys(n for r in rows for n in r["outputs"]))
    keys = {
        n: next((k for k, _ in _HEADLINE if any(k in r["outputs"].get(n, {}) for r in rows)), None)
        for n in outputs
    }
    # the measure below the output's name: six outputs then fit one line at 80 columns
    heads = [f"{n}\n{dict(_HEADLINE)[k]}" if (k := keys[n]) else n for n in outputs]
    cells = [[r["label"]] + [_cell(r["outputs"].get(n), keys[n]) for n in outputs] for r in rows]
    return "\n".join(
        [
            para(f"{pipeline_head(name, sha)}, factor {factor}: {len(rows)} pair(s)", "", ""),
            table(cells, ["pair"] + heads),
            para("(=: bitwise identical; every measure of each pair: --json)", "", ""),
        ]
    )
