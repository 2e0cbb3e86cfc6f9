"""The report: budget, verdict stability, advice, environments and plots as Markdown and HTML.

Nothing is computed here: kit.app.verbs' report reads the numbers once (a Report); this module
lays them out and draws the plots with matplotlib: kit's own by stage (seven plots), a pipeline
file's by output (two), each beside the report.md and report.html they are written into.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..analysis.compare import ALL_MODELS
from ..core.atomic import out_folder, write_bytes
from ..core.numbers import fmt
from ..core.version import __version__
from .explain import stored_lines
from .homology import LEAK_HEAD, closing, clustering_line, leak_cells, output_homology_text
from .homology import VERDICT_HEAD as HOMOLOGY_HEAD
from .homology import verdict_cells as homology_cells
from .homologyplots import plot_homology
from .plots import (
    plot_amplification,
    plot_embedding,
    plot_flips,
    plot_output_verdicts,
    plot_svd_iters,
    plot_travel,
)
from .svdplots import plot_components, plot_digits
from .tables import (
    DIFFERENT_TEST,
    VERDICT_HEAD,
    blas_text,
    digits_cell,
    factor_label,
    flips_cell,
    not_measured_lines,
    one_class_note,
    output_advice_text,
    output_budget_text,
    output_verdicts_text,
    unit_lines,
    verdict_cells,
    verdicts_cell,
)
from .writers import HTML, MARKDOWN, html_page


# -- tables -----------------------------------------------------------------------------------
def _budget_rows(b):
    models = [m for m in ALL_MODELS if any(m in r.models for r in b["rows"])]
    rows = [
        [
            factor_label(r.factor, r.level),
            r.pairs,
            DIFFERENT_TEST
            if r.splits is not None
            else f"{sum(r.identical[s] == r.pairs for s in r.stages)}/{len(r.stages)}",
            fmt(r.emb_rel_max),
            digits_cell(r.emb_digits_min),
            fmt(r.emb_rel_seed_units),
            fmt(r.sign_flips_max),
            fmt(r.kmeans_ari_min),
            fmt(r.knn_jaccard_min),
        ]
        + [flips_cell(r.models.get(m)) for m in models]
        + [verdicts_cell(r), "; ".join(r.confounds) or "-"]
        for r in b["rows"]
    ]
    head = (
        [
            "factor",
            "pairs",
            "stages identical in all pairs",
            "emb diff",
            "emb digits",
            "emb (seed u.)",
            "sign flips",
            "ARI min",
            "Jaccard min",
        ]
        + [f"flips {m}" for m in models]
        + ["verdicts changed", "confounds"]
    )
    return rows, head


def _verdict_rows(rep):
    """Every set's verdicts, those that changed first: they are what a reader looks for."""
    rows = [(name, v) for name, vs in rep.items() for v in vs]
    rows.sort(key=lambda nv: nv[1].stable)  # stable sort: set order kept within each half
    return ([[name] + verdict_cells(v)[:-1] for name, v in rows], ["run set"] + VERDICT_HEAD[:-1])


def _env_rows(runs: list):
    """One row per distinct measured environment, with how many runs it made."""
    seen: dict = {}
    for stack, e in runs:
        blas = blas_text(e.get("threadpools"), e.get("blas_build"))
        key = (
            stack,
            e["python"],
            e["machine"] + (" (Rosetta)" if e.get("rosetta") else ""),
            e.get("os_release") or e["os"],
            e["cpu"],
            e["packages"].get("numpy"),
            e["packages"].get("scipy"),
            e["packages"].get("scikit-learn"),
            blas,
            e.get("host"),
            e["image"][:19] if e.get("image") else "-",
        )
        seen[key] = seen.get(key, 0) + 1
    return (
        [list(k) + [n] for k, n in seen.items()],
        [
            "stack",
            "python",
            "machine",
            "os",
            "cpu",
            "numpy",
            "scipy",
            "scikit-learn",
            "BLAS (measured)",
            "host",
            "image",
            "runs",
        ],
    )


# -- documents --------------------------------------------------------------------------------
def _own_plots(rec) -> dict:
    """{file name: a function drawing it} of kit's own report, in the report's order (``rec``
    read only by the functions: write_steps names them without a report)."""
    return {
        "flips_seed_units.png": lambda: plot_flips(rec.budget),
        "embedding_difference.png": lambda: plot_embedding(rec.budget),
        "svd_components.png": lambda: plot_components(rec.budget),
        "significant_digits.png": lambda: plot_digits(rec.budget),
        "svd_iterations.png": lambda: plot_svd_iters(rec.budget, rec.advice, rec.per_level),
        "amplification.png": lambda: plot_amplification(rec.budget),
        "homology.png": lambda: plot_homology(rec.budget.get("homology")),
    }


def _pipeline_plots(rec) -> dict:
    """{file name: a function drawing it} of a pipeline file's report."""
    return {
        "travel.png": lambda: plot_travel(rec.budget, rec.verdicts, rec.sizes),
        "verdicts.png": lambda: plot_output_verdicts(rec.verdicts, list(rec.budget["factors"])),
    }


def write_steps(subject) -> list:
    """What ``write`` tells its ``step`` for a report of ``subject``, in order: each plot it
    draws, then the files."""
    plots = (_pipeline_plots if subject.is_pipeline else _own_plots)(None)  # names: none drawn
    return [f"the plot {name}" for name in plots] + ["report.md and report.html"]


def _drawn(plots: dict, tell) -> dict:
    out = {}
    for name, draw in plots.items():
        tell()
        out[name] = draw()
    return out


def build(rec, tell=lambda: None) -> dict:
    """Everything kit's own report shows (a Report of kit's own), its environments' rows and its
    plots (``tell()`` as each plot begins)."""
    return {
        "budget": rec.budget,
        "advice": rec.advice,
        "verdicts": rec.verdicts,
        "explained": list(rec.explained),
        "environments": _env_rows(list(rec.environments)),
        "plots": _drawn(_own_plots(rec), tell),
    }


def _sections(r: dict, w):
    """kit's own report's blocks, written by ``w`` (kit.views.writers)."""
    fmt_table, para, heading, items = w.table, w.para, w.heading, w.bullets
    image = lambda name, caption: w.image(name, caption, r["plots"][name])  # noqa: E731
    b, a = r["budget"], r["advice"]
    ds = b["dataset"]
    tag = " — SYNTHETIC DATA" if ds.get("synthetic") else ""
    rel = f", UniProt release {ds['release']}" if ds.get("release") else ""
    out = [
        heading(1, f"Reproducibility budget{tag}"),
        para(
            f"Dataset {ds.get('name')} ({ds.get('rows')} proteins, {ds.get('test')} test{rel}; "
            f"sha256 {ds.get('sha256', '')[:16]}). Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
            f"by kit {__version__}. Every number below is read from the stored runs."
        ),
    ]
    out += [heading(2, "What to pin first")]
    out += [para(line + ".") for line in unit_lines(a)]
    out += [
        fmt_table(
            [
                [i + 1, x["factor"], x["level"], fmt(x["reach_seed_units"]), x["pairs"]]
                for i, x in enumerate(a["ranking"])
            ],
            ["#", "factor", "reached", "seed units", "pairs"],
        )
    ]
    out.append(items([x["text"] for x in a["recommendations"]]))
    out.append(items([line + "." for line in not_measured_lines(a)]))
    out += [heading(2, "The budget"), fmt_table(*_budget_rows(b))]
    if note := one_class_note(b["rows"]):
        out.append(para("Note: " + note + "."))
    if b["yardstick"]:
        y = b["yardstick"]
        out.append(
            para(
                f"One seed unit = the median over the seed pairs: embedding "
                f"difference {fmt(y['emb_rel'])}; flips "
                + ", ".join(f"{m} {fmt(v, 4)}" for m, v in y["flips"].items())
                + "; accuracy SD across seed runs "
                + ", ".join(f"{m} {fmt(v, 4)}" for m, v in y["acc_sd"].items())
                + "."
            )
        )
    elif b["note"]:
        out.append(para(b["note"]))
    for name, caption in (
        ("flips_seed_units.png", "Flips per factor"),
        ("embedding_difference.png", "Embedding difference per factor"),
        ("svd_components.png", "Each SVD component and singular value"),
        ("significant_digits.png", "Significant digits per stage"),
        ("svd_iterations.png", "Power iterations against flips and time"),
        ("amplification.png", "Amplification curves per model"),
    ):
        if r["plots"].get(name):
            out.append(image(name, caption))
    if r["explained"]:  # only once `kit explain` stored some cross-fed runs
        out += [
            heading(2, "Where the differences start"),
            para(
                "Each stage that differs either originates the difference (it still "
                "differs when b's stack is fed a's inputs: a cross-fed run) or only "
                "inherits it; read from the cross-fed runs `kit explain` stored."
            ),
        ]
        for x in r["explained"]:
            out += [heading(3, x["factor"])] + [para(t) for t in stored_lines(x)]
    out += [
        heading(2, "Verdict stability"),
        para(
            "Paired bootstrap (2,000 resamples, rng seed 12345, 95% percentile interval) of "
            "each model pair's accuracy and AUC difference in every run."
        ),
        fmt_table(*_verdict_rows(r["verdicts"])),
    ]
    h = b.get("homology")
    if h is not None and h.runs:
        out += [
            heading(2, "Under homology"),
            para(
                clustering_line(h.clustering) + ". The cluster bootstrap resamples test "
                "clusters whole (both models on the same draws, 2,000 resamples, 95%); "
                "medians over the runs, ranges in brackets."
            ),
            fmt_table([leak_cells(m, h.models[m]) for m in ALL_MODELS if m in h.models], LEAK_HEAD),
            fmt_table([homology_cells(v) for v in h.verdicts], HOMOLOGY_HEAD),
            para(closing(h)),
        ]
        if r["plots"].get("homology.png"):
            out.append(image("homology.png", "Verdict intervals and accuracy under homology"))
    out += [heading(2, "Measured environments"), fmt_table(*r["environments"])]
    return out


def write(rec, out_dir, step=None) -> dict:
    """report.md (with its PNG plots beside it) and a self-contained report.html of a Report
    (kit.app.verbs' report) into ``out_dir`` (made if need be): {"markdown", "html", "plots"}.
    ``step(what)``: told as each part begins (write_steps names them)."""
    from ..app.verbs.reporting import teller

    tell = teller(step, tuple(write_steps(rec.subject)))
    plots, md, page = (_by_outputs if rec.subject.is_pipeline else _by_stages)(rec, tell)
    tell()
    out_dir = out_folder(out_dir, [*plots, "report.md", "report.html"])
    for name, data in plots.items():  # beside the report
        if data:
            write_bytes(out_dir / name, data)
    write_bytes(out_dir / "report.md", md.encode())
    write_bytes(out_dir / "report.html", page.encode())
    return {
        "markdown": str(out_dir / "report.md"),
        "html": str(out_dir / "report.html"),
        "plots": [str(out_dir / n) for n, d in plots.items() if d],
        "not_drawn": {n: _NOT_DRAWN[n] for n, d in plots.items() if not d},
    }


def _by_stages(rec, tell) -> tuple:
    """(plots, report.md, report.html) of kit's own pipeline."""
    r = build(rec, tell)
    # every cell, sentence and heading is text: a name in it (a dataset's, a host's or a cpu's
    # from a bundle) is quoted for Markdown and for HTML by the writers, never written raw
    md = _sections(r, MARKDOWN)
    return (
        r["plots"],
        MARKDOWN.joined(md) + "\n",
        html_page("kit reproducibility budget", _sections(r, HTML)),
    )


# -- a subject's outputs by their kinds (a pipeline file's report) ----------------------------
def _output_sections(b: dict, v: dict, a: dict, w, homology=None, plots=None) -> list:
    """A pipeline file's report, written by ``w``: its budget, verdicts and advice as the
    commands lay them out, under homology where it declares protein ids, then its figures."""
    out = [w.heading(1, f"kit report: pipeline {b['name']}"), w.para(f"sha256 {b['pipeline']}")]
    for title, part in (
        ("Budget", output_budget_text(b, w)),
        ("Verdicts", output_verdicts_text(v, w)),
        ("What to fix first", output_advice_text(a, w)),
    ):
        out += [w.heading(2, title), part]
    if homology:
        out += [w.heading(2, "Under homology"), output_homology_text(homology, w)]
    if plots is not None:
        out += [w.heading(2, "Figures")]
        out += [w.image(name, _CAPTIONS[name], data) for name, data in plots.items() if data]
        out.append(
            w.bullets(
                [f"{_CAPTIONS[n]}: not drawn, {_NOT_DRAWN[n]}" for n, d in plots.items() if not d]
            )
        )
    return out


def _by_outputs(rec, tell) -> tuple:
    """(plots, report.md, report.html) of a pipeline file, as `kit report --pipeline` writes:
    the same writers and page as kit's own report."""
    b, v, a = rec.budget, rec.verdicts, rec.advice
    plots = _drawn(_pipeline_plots(rec), tell)
    md = _output_sections(b, v, a, MARKDOWN, rec.homology, plots)
    page = html_page(
        f"kit report: {rec.subject.name}", _output_sections(b, v, a, HTML, rec.homology, plots)
    )
    return plots, MARKDOWN.joined(md) + "\n", page


_CAPTIONS = {
    "travel.png": "How far each factor's differences travel, per output",
    "verdicts.png": "Accuracy and verdicts per factor",
}
# why a plot is left out (its data is not stored), and what would store it
_NOT_DRAWN = {
    "travel.png": "no difference was measured (no pairs stored, every output "
    "identical, or hashes only)",
    "verdicts.png": "no verdicts (no truth and probabilities outputs, or no pairs)",
    "flips_seed_units.png": "only seed pairs measured the predictions",
    "embedding_difference.png": "no embedding arrays stored (hashes only)",
    "svd_components.png": "no SVD arrays stored (hashes only)",
    "significant_digits.png": "no stage arrays stored (hashes only)",
    "svd_iterations.png": "kit run --factor svd-iters makes its pairs",
    "amplification.png": "kit run --factor perturb makes its pairs",
    "homology.png": "kit data homology NAME clusters the dataset",
}


def folder_name(subject) -> str:
    """The folder under kit's reports/ a subject's report goes to by default: a dataset's name,
    or a pipeline's beside its file's stem and hash (never a dataset's)."""
    if subject.is_pipeline:
        return f"pipeline-{Path(subject.name).stem}-{subject.short}"
    return subject.name
