"""Plain-text tables of budgets and runs for the terminal (tabulate); no computation here.

Every table and paragraph fits the terminal's width (kit.views.fit): cells wrap, wide tables split.
"""

from __future__ import annotations

from ..analysis.compare import ALL_MODELS, STAGES
from ..core.numbers import fmt
from ..core.subject import pipeline_head
from .fit import para, table
from .writers import TEXT, Writer

# stage names short enough for a column header (tables, pairs and the digits plot)
SHORT_STAGES = {
    "svd_rand": "svd_r",
    "svd_arpack": "svd_a",
    "kmeans.inertia": "inert",
    "torch_mlp": "torch",
}


def factor_label(factor: str, level: str) -> str:
    """A budget row's or a pair's name: the factor, and its level where it has one (svd-iters=50)."""
    return factor + (f"={level}" if level else "")


ONE_CLASS = "1-class"  # marks a model that predicted one class for every protein in some run


def flips_cell(d, units: bool | None = None) -> str:
    """A model's flips in a budget row: "median/max (median in seed units)".

    ``units``: None shows both, True the seed units alone, False the raw counts alone.
    """
    if d is None:
        return "-"
    su = d.flips_median_seed_units
    raw = f"{fmt(d.flips_median, 4)}/{d.flips_max}"
    text = (
        fmt(su)
        if units
        else raw
        if units is False
        else raw + (f" ({fmt(su)})" if su is not None else "")
    )
    return text + (f" {ONE_CLASS}" if d.one_class_runs else "")


def one_class_note(rows: list) -> str | None:
    """The legend for ONE_CLASS, naming the models it marks (None when nothing is marked)."""
    models = sorted({m for r in rows for m, d in r.models.items() if d.one_class_runs})
    if not models:
        return None
    return (
        f"{ONE_CLASS}: {', '.join(models)} predicted a single class for every test protein in "
        "some run; its flips say nothing about stability (use a larger --n)"
    )


def digits_cell(digits: float | None) -> str:
    """Significant decimal digits, one decimal ("-": nothing to compare)."""
    return "-" if digits is None else f"{digits:.1f}"


def verdicts_cell(row) -> str:
    return "-" if row.verdicts_changed_max is None else f"{row.verdicts_changed_max}/12"


DIFFERENT_TEST = "different test proteins"  # a pair of seed:split: nothing of it corresponds


def identical_cell(row) -> str:
    """Pairs identical at every stage, or why a row's pairs are not compared at all."""
    return DIFFERENT_TEST if row.splits is not None else f"{row.all_identical}/{row.pairs}"


def splits_lines(rows: list) -> list:
    """The rows of factors that change what is measured: accuracy spread across their runs
    beside the training seeds', and the verdicts that held on every split."""
    out = []
    for r in (r for r in rows if r.splits is not None):
        s = r.splits
        cells = [
            [
                m,
                fmt(d["acc_spread"]),
                fmt(d["acc_sd"]),
                fmt(d["seed_acc_spread"]),
                fmt(d["seed_acc_sd"]),
            ]
            for m, d in s["models"].items()
        ]
        held = "-" if s["verdicts_held"] is None else f"{s['verdicts_held']} of {s['verdicts']}"
        out += [
            "",
            para(
                f"{factor_label(r.factor, r.level)} changes what is measured: its runs "
                f"predict {DIFFERENT_TEST}, so none is compared with another. "
                f"Accuracy across {s['runs']} splits beside {s['seed_runs']} training "
                f"seeds; verdicts held on every split: {held}"
            ),
            table(cells, ["model", "split range", "split sd", "seed range", "seed sd"]),
        ]
    return out


def blas_lines(threadpools, build: dict | None = None) -> list:
    """The BLAS libraries a fingerprint measured, one a line: "owner: api version kernel",
    else what numpy's build information names (threadpoolctl cannot see Apple's Accelerate),
    else why not."""
    seen = [
        f"{p.get('owner')}: {p.get('internal_api')} {p.get('version')} "
        f"{p.get('architecture') or ''}".strip()
        for p in threadpools or []
        if p.get("user_api") == "blas"
    ]
    if seen:
        return seen
    if build and build.get("name"):
        return [
            (
                f"{build['name']} {build.get('version') or ''}".strip()
                + " (numpy's build info; threadpoolctl sees no BLAS)"
            )
        ]
    if threadpools is None:
        return ["not measured (no threadpoolctl in this stack)"]
    return ["none found by threadpoolctl or numpy's build info"]


def blas_text(threadpools, build: dict | None = None) -> str:
    """blas_lines in one line: "owner: api version kernel; ..."."""
    return "; ".join(blas_lines(threadpools, build))


def blas_note(threadpools, build: dict | None = None) -> list:
    """A stack's BLAS libraries as the note under its row (fit.table's ``notes``): one
    library a line, "BLAS" before the first (a column of them took ~80 lines at 80 columns)."""
    return [
        ("BLAS  " if i == 0 else "      ") + line
        for i, line in enumerate(blas_lines(threadpools, build))
    ]


VERDICT_HEAD = [
    "verdict (b-a metric)",
    "runs",
    "b>a",
    "b<a",
    "n.s.",
    "stable",
    "changed in",
    "difference range",
    "per run",
]


def verdict_cells(v) -> list:
    """One verdict's stability row, as `kit verdicts`, the report and the TUI show it."""
    c = v.counts
    diffs = [r.diff for r in v.per_run]
    return [
        v.verdict,
        str(v.runs),
        str(c[">"]),
        str(c["<"]),
        str(c["="]),
        "yes" if v.stable else "NO",
        f"{v.groups_changed}/{v.groups} groups",
        f"{min(diffs):+.4f} .. {max(diffs):+.4f}",
        "".join(r.verdict for r in v.per_run),
    ]


def dataset_line(ds: dict, why: str | None = None) -> str:
    tag = " [SYNTHETIC]" if ds.get("synthetic") else ""
    return para(
        f"dataset {ds.get('name', '?')}{tag}: {ds.get('rows', '?')} proteins, "
        f"{ds.get('test', '?')} test, sha256 {ds.get('sha256', '')[:12]}"
        + (f" ({why})" if why else ""),
        "  ",
        "",
    )


def budget_text(b: dict, why: str | None = None) -> str:
    rows = b["rows"]
    out = [dataset_line(b["dataset"], why)]
    if not rows:
        out.append(
            para("no pairs stored for this dataset yet: run `kit run --factor repeat` first")
        )
        return "\n".join(out)
    measured, rows = splits_lines(rows), [r for r in rows if r.splits is None]
    stages = [s for s in STAGES if any(s in r.identical for r in rows)]
    models = [m for m in ALL_MODELS if any(m in r.models for r in rows)]
    bits = [
        [factor_label(r.factor, r.level), r.pairs]
        + [f"{r.identical[s]}/{r.pairs}" if s in r.identical else "-" for s in stages]
        for r in rows
    ]
    out += [
        "",
        para("Bits: pairs in which each stage is bitwise identical"),
        table(bits, ["factor", "pairs"] + [SHORT_STAGES.get(s, s) for s in stages], key=2),
    ]
    mags = [
        [
            factor_label(r.factor, r.level),
            fmt(r.emb_rel_max),
            digits_cell(r.emb_digits_min),
            fmt(r.emb_rel_seed_units),
            fmt(r.sv_rel_max),
            fmt(r.sign_flips_max),
            fmt(r.kmeans_ari_min),
            fmt(r.knn_jaccard_min),
        ]
        for r in rows
        if r.emb_rel_max is not None
    ]
    if mags:
        out += [
            "",
            para("Magnitudes (largest over the pairs; digits, ARI and Jaccard: lowest)"),
            table(
                mags,
                [
                    "factor",
                    "emb diff",
                    "digits",
                    "emb (seed u.)",
                    "sv diff",
                    "sign flips",
                    "k-means ARI",
                    "kNN Jaccard",
                ],
            ),
        ]
    n_test = b["dataset"].get("test", "?")
    preds = [
        [factor_label(r.factor, r.level)]
        + [flips_cell(r.models.get(m)) for m in models]
        + [fmt(max((d.max_dp for d in r.models.values()), default=None)), verdicts_cell(r)]
        for r in rows
    ]
    # the verdicts column's legend, said only where the column holds a value: printed always,
    # "conclusions: most of the 12 verdicts changed in one pair" read as a finding above a
    # torch-threads table whose column was all "-"
    legend = (
        "; verdicts column: the most of the 12 verdicts that changed in any one pair"
        if any(r.verdicts_changed_max is not None for r in rows)
        else ""
    )
    out += [
        "",
        para(
            f"Predictions: flips of {n_test} test proteins, median/max (median in seed "
            f"units){legend}"
        ),
        table(preds, ["factor"] + models + ["max |dp|", "verdicts"]),
    ] + measured
    y = b["yardstick"]
    if y:
        out += [
            "",
            para(
                f"1 seed unit = the median over the seed pairs ({y['pairs']}; torch: "
                f"{y['torch_pairs']}): embedding difference {fmt(y['emb_rel'])}; flips "
                + ", ".join(f"{m} {fmt(v, 4)}" for m, v in y["flips"].items())
            ),
        ]
    for note in (one_class_note(rows), b["note"]):
        if note:
            out += ["", para(note, "  ", "note: ")]
    amp = b.get("amplification") or {}
    if amp:
        lines = []
        for name, e in amp.items():
            for m, d in e["models"].items():
                if d["observed"] or d["predicted"]:
                    lines.append(
                        [
                            name,
                            fmt(e["emb_rel"]),
                            m,
                            fmt(d["predicted"]),
                            fmt(d["observed"], 4),
                            d["verdict"],
                        ]
                    )
        if lines:
            out += [
                "",
                para(
                    "Explained by magnitude? Flips the perturbation curve predicts for "
                    "each factor's embedding difference, beside those observed (median)"
                ),
                table(lines, ["factor", "emb diff", "model", "predicted", "observed", "reading"]),
            ]
    if b.get("homology") is not None:
        from .homology import summary_line

        out += ["", para(summary_line(b["homology"]))]
    conf = [(r, r.confounds) for r in rows if r.confounds]
    if conf:
        out += ["", para("Confounds: attributes that also differed within a factor's pairs")]
        for r, c in conf:
            for k, v in c.items():
                out.append(
                    para(f"{factor_label(r.factor, r.level)}: {k}: {'; '.join(v)}", "      ", "  ")
                )
    return "\n".join(out)


def runs_text(runs: list, datasets: dict | None = None, dataset: bool = True) -> str:
    """One row per run: its dataset (unless ``dataset`` is False: one pipeline's runs, named
    above the table), stack and the setting that distinguishes it."""
    from ..analysis.verdicts import run_label

    names = {h: d.get("name", h[:12]) for h, d in (datasets or {}).items()}
    # a lab pipeline's runs: its file's name and hash (an edited file is another pipeline)
    rows = [
        [r.id[:12]]
        + (
            [
                names.get(r.spec.dataset, r.spec.dataset[:12])
                + (f" {r.spec.pipeline[:12]}" if r.spec.pipeline else "")
            ]
            if dataset
            else []
        )
        + [r.spec.stack, run_label(r.spec, stack=False) + _before(r), fmt(r.manifest["wall_s"])]
        for r in runs
    ]
    # short headers and the long cells wrapped: 80 columns hold a pipeline's runs in one table
    head = ["run"] + (["dataset"] if dataset else []) + ["stack", "setting", "wall s"]
    return table(rows, head, wrap=(1, 3) if dataset else (2,))


def _before(r) -> str:
    """Whether a warm run followed another in its worker process, as the worker counted (how
    many is the scheduler's choice, so not said: it would differ between two builds)."""
    n = r.manifest.get("runs_before")
    if r.spec.process != "warm" or n is None:
        return ""
    return " (after another run)" if n else " (yet its worker's first run)"


def libraries(attrs: dict) -> str:
    """scikit-learn's version, torch's, or both (an external stack can hold both)."""
    have = [attrs.get("scikit-learn"), attrs.get("torch") and f"torch {attrs['torch']}"]
    return " + ".join(x for x in have if x) or "-"


def image_note(image: dict) -> str:
    """A stack image in a few words: its id, size and base."""
    if not image.get("id"):
        return f"image on {image.get('base')}: not built"
    size = f", {image['size'] / 1e6:,.0f} MB" if image.get("size") else ""
    glibc = str(image.get("glibc") or "?").split("-")[0]
    fetched = image.get("python_fetched")
    python = (
        f"; CPython {fetched['version']} fetched (sha256 {fetched['sha256'][:12]})"
        if isinstance(fetched, dict) and fetched.get("version") and fetched.get("sha256")
        else ""
    )
    return (
        f"image {image['id'][:19]}{size} on {image.get('release') or ''} "
        f"({image['base']}, glibc {glibc}){python}"
    )


def stacks_text(rows: list, doctor: bool = False) -> str:
    """`kit stacks` (``doctor``: `kit stacks doctor`): a row of short columns per stack, what
    a column would squeeze (why it is unavailable, its BLAS libraries, its problems) on lines
    of its own under it: an unavailable stack took 7 lines at 80 columns."""
    if doctor:
        out, notes = [], []
        for r in rows:
            fp = r.get("measured") or {}
            pk = fp.get("packages", {})
            problems = r.get("problems") or []
            out.append(
                [
                    r["name"],
                    r["status"],
                    fp.get("python", "-"),
                    pk.get("numpy", "-"),
                    pk.get("scipy", "-"),
                    pk.get("scikit-learn") or (f"torch {pk['torch']}" if pk.get("torch") else "-"),
                    str(len(problems)) if problems else "none",
                ]
            )
            notes.append(
                (blas_note(fp.get("threadpools"), fp.get("blas_build")) if fp else [])
                + [f"problem: {p}" for x in problems for p in x.splitlines()]
            )
        return table(
            out,
            ["stack", "status", "python", "numpy", "scipy", "sklearn/torch", "problems"],
            wrap=(5,),
            notes=notes,
        )
    out, notes = [], []
    for r in rows:
        a = r["attributes"]
        # a version's words after the number ("1.21.4 (intel-numpy)") read as a note
        numpy, _, build = str(a.get("numpy") or "-").partition(" ")
        out.append(
            [
                r["name"] + (" *" if r["reference"] else ""),
                a["python"],
                numpy,
                libraries(a),
                a["blas"] if isinstance(a["blas"], str) else "-",
                r["status"],
            ]
        )
        notes.append(
            ([f"numpy {a['numpy']}"] if build else [])
            + ([f"arch {a['arch']}"] if a.get("arch") not in (None, "native") else [])
            + ([r["reason"]] if r["reason"] else [])
            + ([f"external: {r['venv']}"] if r["kind"] == "external" else [])
            + ([image_note(r["image"])] if r.get("image") else [])
        )
    return table(
        out,
        ["stack (* reference)", "python", "numpy", "sklearn/torch", "BLAS", "status"],
        wrap=(3,),
        notes=[["; ".join(n)] if n else None for n in notes],
    )


def verdicts_text(report: dict) -> str:
    out = []
    for name, rows in report.items():
        out += [
            para(
                f"Run set '{name}': verdicts of the paired bootstrap (95% interval excludes "
                "0?); a group is a reference run and the runs that differ from it only in "
                "the set's factor"
            ),
            table([verdict_cells(v) for v in rows], VERDICT_HEAD, wrap=(8,)),
            "",
        ]
    return "\n".join(out).rstrip()


def not_measured_lines(a: dict) -> list:
    """The unmeasured factors in words: those that could run here, then each that cannot, why."""
    can = [x["factor"] for x in a["not_measured"] if not x["cannot_run_here"]]
    out = ["Not measured on this dataset: " + ", ".join(can)] if can else []
    return out + [
        f"Cannot be measured here: {x['factor']}: {x['cannot_run_here']}"
        for x in a["not_measured"]
        if x["cannot_run_here"]
    ]


def unit_lines(a: dict) -> list:
    """The yardsticks in one line: the unit the ranking is measured in, not an item of it (a
    seed ranked "1" in "what to pin first" read as "pin your seed"); short, so the ranking
    stays on an 80x24 screen."""
    units = a.get("unit", [])
    if not units:
        return []
    return [
        "Not ranked, the unit (a seed is named and recorded, not pinned): "
        + "; ".join(
            f"{x['factor']} = 1 seed unit"
            + (f" of {x['of']}" if x["factor"] != "seed" else "")
            + f", reached {x['level']} in {x['pairs']} pair(s)"
            for x in units
        )
    ]


def advice_text(a: dict, why: str | None = None) -> str:
    out = [
        dataset_line(a["dataset"], why),
        "",
        para("What to pin first (how far each factor travelled):"),
    ]
    out += [para(line + ".", "  ", "") for line in unit_lines(a)]
    out.append(
        table(
            [
                [
                    i + 1,
                    r["factor"],
                    r["level"],
                    fmt(r["reach_seed_units"]),
                    r["pairs"],
                    ", ".join(r["confounds"]) or "-",
                ]
                for i, r in enumerate(a["ranking"])
            ],
            ["#", "factor", "reached", "seed units", "pairs", "confounds"],
            wrap=(5,),
        )
    )
    out += ["", "Advice (each from the measured numbers):"]
    out += [para(r["text"], "  ", "- ") for r in a["recommendations"]]
    per = [
        (m, ", ".join(f"{x['factor']} {fmt(x['flips_median'], 4)}" for x in rows))
        for m, rows in a["per_model"].items()
        if rows
    ]
    if per:
        out += ["", para("Per model, factors that flipped predictions (median flips):")]
        out += [para(f"{m}: {txt}", "      ", "  ") for m, txt in per]
    if a["not_measured"]:
        out += [""] + [para(line, "  ") for line in not_measured_lines(a)]
    return "\n".join(out)


def image_lines(found: list) -> list:
    """`kit compare`'s lines on the container images: each held fixed (the same id, rebuilt
    here from the recipe or the bundle's own loaded with --trust-image), or a finding of its own
    (another id, and what differs)."""
    if not found:
        return []
    out = ["", "Container images:"]
    for x in found:
        how = (
            "the bundle's own image, checked and loaded (--trust-image)"
            if x.get("loaded")
            else "rebuilt here from the bundle's recipe"
        )
        if x["same"]:
            text = (
                f"{x['stack']}: the same image id here ({x['here'][:19]}, {how}): the image "
                "is held fixed, so what differs above is the machine (CPU, kernel)"
            )
        else:
            text = (
                f"{x['stack']}: a FINDING: the image {how} is {x['here'][:19]}, "
                f"theirs {x['there'][:19]}; {x['difference']}; what differs above mixes "
                "the images and the machines"
            )
        if x.get("carried") and not x.get("loaded"):
            text += (
                "; the bundle carries its image too, not run (kit compare --trust-image runs it)"
            )
        out.append(para(text, "      ", "  "))
    return out


def compare_text(rep: dict) -> str:
    out = [
        f"Bundle from {rep['bundle_host']['name']} compared on {rep['this_host']['name']}:",
        para(rep["answer"], "  "),
        "",
    ]
    if rep.get("digests_only"):  # a hash-only bundle: bits from the digests, nothing more
        out += [para(rep["digests_only"], "  ", "note: "), ""]
    if rep["per_run"]:
        first = any("first_difference" in r for r in rep["per_run"])
        out.append(
            table(
                [
                    [r["label"], f"{r['identical_stages']}/{r['stages']}"]
                    + ([r.get("first_difference") or "-"] if first else [])
                    + [
                        fmt(r["emb_rel"]),
                        " ".join(f"{m}:{v}" for m, v in r["flips"].items()) or "-",
                    ]
                    for r in rep["per_run"]
                ],
                ["run (theirs vs here)", "stages identical"]
                + (["first differing stage"] if first else [])
                + ["emb diff", "flips"],
                wrap=(0, 4 if first else 3),
            )
        )
    for r in rep["rows"]:
        su = {
            m: d.flips_max_seed_units
            for m, d in r.models.items()
            if d.flips_max_seed_units is not None
        }
        if su:
            out.append(
                "  in seed units (largest flips): "
                + ", ".join(f"{m} {fmt(v)}" for m, v in su.items())
            )
    if rep["environment_differences"]:
        out += ["", "What differs between the two machines (measured):"]
        out += [
            para(f"{k}: {'; '.join(v)}", "      ", "  ")
            for k, v in rep["environment_differences"].items()
        ]
    out += image_lines(rep.get("images") or [])
    if rep["not_compared"]:
        out += ["", "Not compared here:"] + [
            para(f"{x['run'][:12]}: {x['reason']}", "      ", "  ") for x in rep["not_compared"]
        ]
    return "\n".join(out)


def amplify_text(rep: dict) -> str:
    cs = rep["curves"]
    if not cs:
        return "no perturbation runs on this dataset: run `kit run --factor perturb`"
    eps = [p["eps"] for p in next(iter(cs.values()))]
    rows = [
        [m]
        + [f"{fmt(p['flips_median'], 4)}" for p in c]
        + [fmt(rep["first_flip"][m]), fmt(rep["first_flip_any"][m])]
        for m, c in cs.items()
    ]
    out = [
        para(
            "Amplification: median flips after retraining on the embedding + noise of "
            "relative size eps. First flip: the smallest eps whose median flips are above 0; "
            "in any draw: the smallest eps at which at least one draw flipped a prediction"
        ),
        table(rows, ["model"] + [f"{e:.0e}" for e in eps] + ["first flip", "in any draw"]),
    ]
    dp = [[m] + [fmt(p["max_dp"]) for p in c] for m, c in cs.items()]
    out += ["", "Largest |delta p|", table(dp, ["model"] + [f"{e:.0e}" for e in eps])]
    f32 = rep["float32_roundtrip"]
    if f32:
        out += [
            "",
            para(
                f"Embedding rounded to float32 and back (difference {fmt(f32['emb_rel'])}): "
                "flips " + ", ".join(f"{m} {fmt(v, 4)}" for m, v in f32["flips"].items())
            ),
        ]
    return "\n".join(out)


# -- a subject's outputs by their kinds (kit.analysis.by_kind's numbers: a pipeline file's) --
# each measure a kind gives, in the order a reader wants them
_MEASURES = (
    ("flips", lambda w: f"{w['flips']} flips, max dp {fmt(w['max_dp'])}"),
    ("ari", lambda w: f"ARI {fmt(w['ari'])}"),
    ("jaccard", lambda w: f"Jaccard {fmt(w['jaccard'])}"),
    ("changed", lambda w: f"{w['changed']} changed"),
    ("nonfinite", lambda w: f"{w['nonfinite']} NaN/inf in one run only"),
    (
        "rel",
        lambda w: (
            f"rel {fmt(w['rel'])}"
            + (f" (metric [{w['worst_metric']}])" if "worst_metric" in w else "")
        ),
    ),
    ("relabelled", lambda w: "clusters renumbered" if w["relabelled"] else ""),
    (
        "digits",
        lambda w: (
            f"{fmt(w['digits'])} digits"  # runs stored before: no worst
            + (f" median, {fmt(w['digits_worst'])} worst" if "digits_worst" in w else "")
        ),
    ),
    (
        "unmeasured",
        lambda w: "bits differ, by how much not measured: hashes only, export with --arrays",
    ),
)


def measure(worst: dict) -> str:
    """The largest difference of one output, in its kind's own terms."""
    if "shape" in worst:
        return f"shape {worst['shape'][0]} vs {worst['shape'][1]}"
    parts = [say(worst) for key, say in _MEASURES if key in worst]
    return ", ".join(p for p in parts if p) or "differs"


def largest(o: dict) -> dict:
    """A budget row's output at each measure's largest difference over the factor's pairs
    (output_budget's ``most`` and ``least``): the worst pair alone may hold fewer flips."""
    out = {**o["worst"], **o.get("most", {}), **o.get("least", {})}
    if not o["worst"].get("unmeasured"):  # some pair was measured: its sizes are the row's
        out.pop("unmeasured", None)
    return out


def shape_line(s: dict) -> str:
    """One line for an output whose shape a factor changed (output_budget's ``shapes``)."""
    a, b = s["shapes"]
    return (
        f"SHAPE: {s['output']} ({s['kind']}) is {tuple(a)} in one run of {s['factor']} and "
        f"{tuple(b)} in the other (runs {s['a'][:12]}, {s['b'][:12]}): a {s['kind']} output "
        f"is compared element by element, so its shape must not depend on {s['factor']}; "
        f"not measured"
    )


def output_budget_text(b: dict, w: Writer = TEXT) -> str:
    """kit.analysis.budget.output_budget's numbers: one row per factor, then the null experiment's
    line (``w``: how it is written, kit.views.writers)."""
    head = _head(b)
    unfit = [w.para(f"UNFIT: {line}; left out") for line in b.get("unfit", [])]
    if not b["factors"]:
        return w.joined(
            [
                w.para(
                    f"{head}: no pairs stored yet (kit run --pipeline {b['name']} --factor repeat)"
                ),
                *unfit,
            ]
        )
    rows = []
    for factor, r in b["factors"].items():
        moved = [f"{n} ({measure(largest(o))})" for n, o in r["outputs"].items() if o["changed"]]
        rows.append([factor, str(r["pairs"]), "\n".join(moved) or "none: every output identical"])
    out = [
        w.para(head),
        w.table(rows, ["factor", "pairs", "outputs that changed (largest difference)"], wrap=(2,)),
    ]
    out += unfit
    for s in b.get("shapes", []):
        out.append(w.para(shape_line(s)))
    if b["loose_line"]:
        out.append(w.para("LOOSE GENERATOR: " + b["loose_line"]))
    elif "repeat" in b["factors"]:
        out.append(
            w.line("repeat: every output identical; the named seeds hold every generator measured")
        )
    wide = b.get("not_in_dtype") or []
    if wide:
        out.append(
            w.para(
                f"precision: {', '.join(wide)} {'is' if len(wide) == 1 else 'are'} not "
                f"float32 in the float32 runs (run returns {'it' if len(wide) == 1 else 'them'}"
                f" in float64): what precision moves there comes from upstream"
            )
        )
    for name in b["inert"]:
        out.append(
            w.para(
                f"seed:{name} changed no output: run reads seeds[{name!r}], but what "
                f"it seeds reaches none of these outputs"
            )
        )
    return w.joined(out)


def _head(d: dict) -> str:
    return pipeline_head(d["name"], d["pipeline"])


def output_verdicts_text(v: dict, w: Writer = TEXT) -> str:
    """Per factor: each verdict's counts over the runs and the pairs that changed it; with one
    model, its accuracy's spread across the runs (``w``: how it is written)."""
    head = _head(v)
    if v["why"]:
        return w.para(f"{head}: {v['why']}")
    first = head + f": models {', '.join(v['models'])}, scored against {v['truth']}"
    if any(k.endswith(" bacc") for r in v["factors"].values() for k in r["verdicts"]):
        first += (
            " (more than two classes: acc is accuracy, bacc balanced accuracy, the mean "
            "of each class's recall)"
        )
    out = [w.para(first)]  # a pipeline's name and models: 81 columns piped
    for line in v["unfit"]:
        out.append(w.para(f"UNFIT: {line}; left out"))
    if not v["factors"]:
        out.append(
            w.para(f"no pairs with verdicts yet (kit run --pipeline {v['name']} --factor seed)")
        )
        return w.joined(out)
    if len(v["models"]) == 1:
        m = v["models"][0]
        rows = [
            [
                f,
                str(len(r["runs"])),
                fmt(r["spread"][m]["min"]),
                fmt(r["spread"][m]["max"]),
                fmt(r["spread"][m]["sd"]),
            ]
            for f, r in v["factors"].items()
        ]
        out.append(
            w.para(f"one model ({m}): no pair to compare; the spread of its accuracy per factor")
        )
        out.append(w.table(rows, ["factor", "runs", "min accuracy", "max accuracy", "sd"]))
        return w.joined(out)
    rows = []
    for f, r in v["factors"].items():
        for key, row in r["verdicts"].items():
            c = row["counts"]
            lo, hi = min(row["diff"].values()), max(row["diff"].values())
            rows.append(
                [
                    f,
                    key,
                    f"{c['>']}/{c['<']}/{c['=']}",
                    fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}..{fmt(hi)}",
                    "holds" if row["stable"] else f"CHANGES in {row['changed']} of {r['pairs']}",
                ]
            )
    out.append(
        w.table(
            rows, ["factor", "b-a metric", "runs >/</=", "difference", "across pairs"], wrap=(1,)
        )
    )
    moved = sorted(
        {f for f, r in v["factors"].items() for row in r["verdicts"].values() if not row["stable"]}
    )
    out.append(
        w.para(
            "a conclusion changes with " + ", ".join(moved) + ": it is a draw of that "
            "factor, not a property of the models"
            if moved
            else "every verdict holds across every factor's pairs"
        )
    )
    return w.joined(out)


_REACHES = {
    "conclusions": "it changes a conclusion",
    "predictions": "it changes predictions",
    "magnitudes": "it moves values and changes no prediction: low priority",
}
_MEASURE_WORDS = {
    "ari": "ARI {}",
    "jaccard": "Jaccard {}",
    "flips": "{} flip(s)",
    "max_dp": "|dp| up to {}",
    "rel": "rel {}",
    "max_rel": "rel {}",
    "changed": "{} changed",
}


def _pin_step(s: dict) -> str:
    """A library, machine or setting factor of output_advice: pin it, with what it reached."""
    moved = ", ".join(
        f"{m['output']} ({_MEASURE_WORDS[m['measure']].format(fmt(m['value']))})"
        if m["measure"] in _MEASURE_WORDS and m["value"] is not None
        else m["output"]
        for m in s["measures"]
    )
    verdicts = f"; the verdict(s) {', '.join(s['verdicts'])} change" if s["verdicts"] else ""
    verb = "pin" if s["level"] != "magnitudes" else "pin, if the values matter,"
    return (
        f"{verb} {s['factor']} ({s['what']}): {_REACHES[s['level']]}: {moved} in "
        f"{s['pairs']} pair(s){verdicts}"
    )


def output_advice_text(a: dict, w: Writer = TEXT) -> str:
    """The steps of output_advice, first what to fix first (``w``: how it is written)."""
    out = [w.para(_head(a) + ": what to fix first")]
    n = 0
    for s in a["steps"]:
        n += 1
        if s["step"] == "loose":
            text = "seed the loose generator: " + s["line"]
        elif s["step"] == "null":
            text = (
                f"run the null experiment first (kit run --pipeline {a['name']} --factor "
                f"repeat): until two runs with the same named seeds are identical, no other "
                f"difference can be told from a loose generator"
            )
        elif s["step"] == "shape":
            text = shape_line(s)
        elif s["step"] == "seed":
            text = (
                f"seed {s['seed']} reaches {', '.join(s['outputs'])} ({s['pairs']} pair(s) of "
                f"{s['factor']})"
                + (
                    f" and changes the verdict(s) {', '.join(s['verdicts'])}"
                    if s["verdicts"]
                    else ""
                )
                + f": {s['rule']}"
            )
        elif s["step"] == "pin":
            text = _pin_step(s)
        elif s["step"] == "inert":
            text = f"seed {s['seed']} reaches no output: what it seeds changes none of them"
        else:
            named = ",".join(f"seed:{x}" for x in s.get("seeds") or ["NAME"])
            text = (
                f"only every seed at once was varied (seed): kit run --pipeline {a['name']} "
                f"--factor {named} varies each named seed alone, to see which one reaches "
                f"what; {s['rule']}"
            )
        out.append(w.para(f"{n}. {text}", "   "))
    if n == 0:
        out.append(w.line("nothing to fix: no stored pair changed an output"))
    return w.joined(out)


def output_compare_text(rep: dict) -> str:
    """`kit compare` of a pipeline's bundle: the answer, then per run the outputs that differ."""
    out = [
        f"Bundle from {rep['bundle_host']['name']} compared on {rep['this_host']['name']}:",
        para(rep["answer"], "  "),
        "",
    ]
    rows = [
        [
            r["label"],
            "identical"
            if r["identical"]
            else "\n".join(
                f"{n} ({measure(d)})" for n, d in r["outputs"].items() if not d["identical"]
            ),
        ]
        for r in rep["per_run"]
    ]
    if rows:
        out.append(table(rows, ["run (theirs vs here)", "outputs that differ"], wrap=(0, 1)))
    out += image_lines(rep.get("images") or [])
    if rep["not_compared"]:
        out += ["", "Not compared here:"] + [
            para(f"{x['run'][:12]}: {x['reason']}", "      ", "  ") for x in rep["not_compared"]
        ]
    return "\n".join(out)
