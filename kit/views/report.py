"""The report: budget, verdict stability, advice, environments and plots as Markdown and HTML.

Nothing is computed here that the budget, verdicts and advice modules do not already compute;
the report lays their results out, and draws three plots with matplotlib.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone
from pathlib import Path

from tabulate import tabulate

from .. import __version__
from ..core import factors
from ..analysis.advice import advise, not_measured_lines
from ..core.atomic import write_bytes
from ..analysis.compare import ALL_MODELS
from ..runs.store import Store
from ..core.numbers import fmt
from .tables import (VERDICT_HEAD, blas_text, factor_label, flips_cell, one_class_note,
                     verdict_cells, verdicts_cell)
from ..analysis.verdicts import stability_report
from ..worker.pipeline import MODELS

_COLOURS = {"lr": "#4c72b0", "mlp": "#dd8452", "hgb": "#55a868", "rf": "#c44e52",
            "torch_mlp": "#8172b2"}


# -- plots ------------------------------------------------------------------------------------
def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _figure().close(fig)
    return buf.getvalue()


def plot_flips(b: dict) -> bytes | None:
    """Median flips per factor and model: in seed units when there are seed runs (log axis).

    Zeros have no place on a log axis: they are written as "0" at the axis' left end, and when
    nothing flipped at all the plot says so on a plain axis instead of a broken log one.
    """
    rows = [r for r in b["rows"] if not factors.is_yardstick(r["factor"])]  # 1 by definition
    if not rows:
        return None
    plt = _figure()
    units = b["yardstick"] is not None
    models = [m for m in ALL_MODELS if any(m in r["models"] for r in rows)]
    value = (lambda d: d["flips_median_seed_units"]) if units else (lambda d: d["flips_median"])
    vals = {m: [value(r["models"][m]) if m in r["models"] else None for r in rows] for m in models}
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.6))
    positive = [v for vs in vals.values() for v in vs if v]
    floor = min(positive + [1.0]) / 3 if positive else 1.0
    h = 0.8 / len(models)
    for i, m in enumerate(models):
        ys = [j + (i - (len(models) - 1) / 2) * h for j in range(len(rows))]
        drawn = [(y, v) for y, v in zip(ys, vals[m]) if v]
        if drawn:
            ax.barh([y for y, _ in drawn], [v - floor / 10 for _, v in drawn], height=h,
                    color=_COLOURS[m], label=m, left=floor / 10)
        else:
            ax.barh([], [], color=_COLOURS[m], label=m)
        for y, v in zip(ys, vals[m]):
            if v == 0:
                ax.text(floor * 1.05, y, "0", va="center", fontsize=7, color=_COLOURS[m])
    if positive:
        ax.set_xscale("log")
        ax.set_xlim(floor, max(positive + [1.0]) * 2)
        if units:
            ax.axvline(1, color="grey", lw=0.8, ls="--")
    else:
        ax.set_xlim(0, 1)
        ax.text(0.5, -0.6, "no factor flipped a prediction", ha="center", fontsize=9)
    ax.set_yticks(range(len(rows)), [factor_label(r) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("median flips in seed units (1 = what a different seed flips; 0 written as 0)"
                  if units else "median flips (no seed runs: raw counts)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title("How far each factor reaches the predictions")
    return _png(fig)


def plot_embedding(b: dict) -> bytes | None:
    rows = [r for r in b["rows"] if r["emb_rel_max"] is not None]
    if not rows:
        return None
    plt = _figure()
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.4))
    vals = [r["emb_rel_max"] for r in rows]
    floor = 1e-17
    ax.barh(range(len(rows)), [max(v, floor) for v in vals], color="#4c72b0")
    for j, v in enumerate(vals):
        if v == 0:
            ax.text(floor * 2, j, "bitwise identical", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(floor, 10)
    ax.set_yticks(range(len(rows)), [factor_label(r) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("largest relative embedding difference (randomized SVD, signs aligned)")
    ax.set_title("How far each factor moves the embedding")
    return _png(fig)


def plot_svd_iters(b: dict, advice: dict, pair_flips: dict | None = None) -> bytes | None:
    """Flips across seeds at each number of power iterations: every pair's flips as a point
    (a few seeds are a few points, not a trend), the median as the line, n under each level;
    the models on ARPACK's embedding at the right; SVD seconds on the second axis."""
    rows = sorted((int(r["level"]), r) for r in b["rows"] if r["factor"] == "svd-iters")
    if len(rows) < 2:
        return None
    plt = _figure()
    fig, ax = plt.subplots(figsize=(8, 4.4))
    xs = [x for x, _ in rows]
    solver = next((r for r in b["rows"] if r["factor"] == "svd-solver"), None)
    arpack_x = xs[-1] * 2
    pair_flips = pair_flips or {}
    for k, m in enumerate(MODELS):
        shift = 2 ** ((k - 1.5) * 0.06)  # side by side, on the log axis
        ax.plot([x * shift for x in xs], [r["models"][m]["flips_median"] for _, r in rows], "-",
                color=_COLOURS[m], label=f"{m} (median)")
        for level, comps in pair_flips.items():
            x = arpack_x if level == "svd-solver" else int(level)
            pts = [c["models"][m]["flips"] for c in comps if m in c["models"]]
            ax.plot([x * shift] * len(pts), pts, "o", color=_COLOURS[m], alpha=0.55, ms=4)
        if solver:
            ax.plot([arpack_x * shift], [solver["models"][m]["flips_median"]], "D", color=_COLOURS[m])
    ticks = xs + ([arpack_x] if solver else [])
    n = {str(x): r["pairs"] for x, r in rows}
    if solver:
        n["svd-solver"] = solver["pairs"]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{x}\nn={n[str(x)]}" for x in xs]
                  + ([f"ARPACK\nn={n['svd-solver']}"] if solver else []))
    ax.set_xlabel("randomized-SVD power iterations (points: each seed pair; line: median"
                  + ("; diamonds: the models on ARPACK's embedding)" if solver else ")"))
    ax.set_ylabel("flips across seeds")
    secs = next((r["basis"]["svd_seconds_by_level"] for r in advice["recommendations"]
                 if r["kind"] == "solver" and r["basis"].get("factor") == "svd-iters"), {})
    if secs and all(secs.get(x) is not None for x in xs):
        ax2 = ax.twinx()
        ax2.plot(xs, [secs[x] for x in xs], "s--", color="grey", label="SVD seconds")
        arpack_s = next((r["basis"]["svd_seconds"][1] for r in advice["recommendations"]
                         if r["kind"] == "solver" and r["basis"].get("factor") == "svd-solver"), None)
        if solver and arpack_s:
            ax2.plot([arpack_x], [arpack_s], "s", color="grey")
        ax2.set_ylabel("SVD wall time, median (s, grey)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1), fontsize=8, frameon=False)
    ax.set_title("The cheapest reduction: power iterations against seed flips")
    return _png(fig)


def plot_amplification(b: dict) -> bytes | None:
    """Flips against the perturbation's size, one line per model (log eps)."""
    from ..analysis.amplify import curves

    cs = curves(b["rows"])
    if not cs:
        return None
    plt = _figure()
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, c in cs.items():
        ax.plot([p["eps"] for p in c], [p["flips_median"] for p in c], "o-",
                color=_COLOURS.get(m, "black"), label=m)
    ax.set_xscale("log")
    ax.set_xlabel("relative size of the noise added to the embedding (eps)")
    ax.set_ylabel("median flips of test predictions")
    for r in b["rows"]:  # where the environment factors sit on the same axis
        f = factors.get(r["factor"])
        if f and f.environmental and r["emb_rel_max"]:
            ax.axvline(r["emb_rel_max"], color="grey", lw=0.6, ls=":")
            ax.text(r["emb_rel_max"], ax.get_ylim()[1] * 0.95, r["factor"], rotation=90,
                    fontsize=7, va="top", color="grey")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title("Amplification: how each model turns input noise into flips")
    return _png(fig)


# -- tables -----------------------------------------------------------------------------------
def _budget_rows(b):
    models = [m for m in ALL_MODELS if any(m in r["models"] for r in b["rows"])]
    rows = [[factor_label(r), r["pairs"],
             f"{sum(r['identical'][s] == r['pairs'] for s in r['stages'])}/{len(r['stages'])}",
             fmt(r["emb_rel_max"]), fmt(r["emb_rel_seed_units"]), fmt(r["sign_flips_max"]),
             fmt(r["kmeans_ari_min"]), fmt(r["knn_jaccard_min"])]
            + [flips_cell(r["models"].get(m)) for m in models]
            + [verdicts_cell(r), "; ".join(r["confounds"]) or "-"] for r in b["rows"]]
    head = (["factor", "pairs", "stages identical in all pairs", "emb diff", "emb (seed u.)",
             "sign flips", "ARI min", "Jaccard min"] + [f"flips {m}" for m in models]
            + ["verdicts changed", "confounds"])
    return rows, head


def _verdict_rows(rep):
    """Every set's verdicts, those that changed first: they are what a reader looks for."""
    rows = [(name, v) for name, vs in rep.items() for v in vs]
    rows.sort(key=lambda nv: nv[1]["stable"])  # stable sort: set order kept within each half
    return ([[name] + verdict_cells(v)[:-1] for name, v in rows],
            ["run set"] + VERDICT_HEAD[:-1])


def _env_rows(store: Store, dataset: str):
    seen = {}
    for r in store.runs(dataset):
        e = r["manifest"]["env"]
        blas = blas_text(e.get("threadpools"))
        key = (r["spec"]["stack"], e["python"], e["machine"] + (" (Rosetta)" if e.get("rosetta") else ""),
               e["os"], e["cpu"], e["packages"].get("numpy"), e["packages"].get("scipy"),
               e["packages"].get("scikit-learn"), blas, e.get("host"))
        seen[key] = seen.get(key, 0) + 1
    return ([list(k) + [n] for k, n in seen.items()],
            ["stack", "python", "machine", "os", "cpu", "numpy", "scipy", "scikit-learn",
             "BLAS (measured)", "host", "runs"])


# -- documents --------------------------------------------------------------------------------
def build(store: Store, dataset: str) -> dict:
    """Everything the report shows, computed once by the library."""
    from ..analysis.budget import budget

    from ..analysis.budget import pair_details

    b = budget(store, dataset)
    a = advise(store, dataset, b)
    per_level = {}
    for f in ("svd-iters", "svd-solver"):
        for p in pair_details(store, dataset, f):
            per_level.setdefault(p["level"] or f, []).append(p["comparison"])
    return {"budget": b, "advice": a, "verdicts": stability_report(store, dataset),
            "environments": _env_rows(store, dataset),
            "plots": {"flips_seed_units.png": plot_flips(b),
                      "embedding_difference.png": plot_embedding(b),
                      "svd_iterations.png": plot_svd_iters(b, a, per_level),
                      "amplification.png": plot_amplification(b)}}


def _sections(r: dict, fmt_table, image, para, heading, items):
    b, a = r["budget"], r["advice"]
    ds = b["dataset"]
    tag = " — SYNTHETIC DATA" if ds.get("synthetic") else ""
    rel = f", UniProt release {ds['release']}" if ds.get("release") else ""
    out = [heading(1, f"Reproducibility budget{tag}"),
           para(f"Dataset {ds.get('name')} ({ds.get('rows')} proteins, {ds.get('test')} test{rel}; "
                f"sha256 {ds.get('sha256', '')[:16]}). Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC "
                f"by kit {__version__}. Every number below is read from the stored runs.")]
    out += [heading(2, "What to pin first")]
    out += [fmt_table([[i + 1, x["factor"], x["level"], fmt(x["reach_seed_units"]), x["pairs"]]
                       for i, x in enumerate(a["ranking"])],
                      ["#", "factor", "reached", "seed units", "pairs"])]
    out.append(items([x["text"] for x in a["recommendations"]]))
    out.append(items([line + "." for line in not_measured_lines(a)]))
    out += [heading(2, "The budget"), fmt_table(*_budget_rows(b))]
    if one_class_note(b["rows"]):
        out.append(para("Note: " + one_class_note(b["rows"]) + "."))
    if b["yardstick"]:
        y = b["yardstick"]
        out.append(para(f"One seed unit = the median over the seed pairs: embedding "
                        f"difference {fmt(y['emb_rel'])}; flips " +
                        ", ".join(f"{m} {fmt(v, 4)}" for m, v in y["flips"].items()) +
                        "; accuracy SD across seed runs " +
                        ", ".join(f"{m} {fmt(v, 4)}" for m, v in y["acc_sd"].items()) + "."))
    elif b["note"]:
        out.append(para(b["note"]))
    for name, caption in (("flips_seed_units.png", "Flips per factor"),
                          ("embedding_difference.png", "Embedding difference per factor"),
                          ("svd_iterations.png", "Power iterations against flips and time"),
                          ("amplification.png", "Amplification curves per model")):
        if r["plots"].get(name):
            out.append(image(name, caption))
    out += [heading(2, "Verdict stability"),
            para("Paired bootstrap (2,000 resamples, rng seed 12345, 95% percentile interval) of "
                 "each model pair's accuracy and AUC difference in every run."),
            fmt_table(*_verdict_rows(r["verdicts"]))]
    out += [heading(2, "Measured environments"), fmt_table(*r["environments"])]
    return out


def write(store: Store, dataset: str, out_dir) -> dict:
    """Write report.md (with PNG plots beside it) and a self-contained report.html."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    r = build(store, dataset)
    for name, data in r["plots"].items():
        if data:
            write_bytes(out_dir / name, data)
    md = _sections(r, lambda rows, head: tabulate(rows, head, tablefmt="github", disable_numparse=True),
                   lambda name, cap: f"![{cap}]({name})", lambda t: t,
                   lambda level, t: "#" * level + " " + t,
                   lambda xs: "\n".join(f"- {x}" for x in xs))
    write_bytes(out_dir / "report.md", ("\n\n".join(md) + "\n").encode())

    def img(name, cap):
        data = base64.b64encode(r["plots"][name]).decode()
        return f'<figure><img alt="{html.escape(cap)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(cap)}</figcaption></figure>'

    body = _sections(r, lambda rows, head: tabulate(rows, head, tablefmt="html", disable_numparse=True),
                     img, lambda t: f"<p>{html.escape(t)}</p>",
                     lambda level, t: f"<h{level}>{html.escape(t)}</h{level}>",
                     lambda xs: "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in xs) + "</ul>"
                     if xs else "")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>kit reproducibility budget</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
            "color:#222}table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid "
            "#ccc;padding:3px 6px;text-align:left}th{background:#f3f3f3}img{max-width:100%}"
            "figcaption{font-size:12px;color:#555}</style></head><body>" + "\n".join(body) + "</body></html>")
    write_bytes(out_dir / "report.html", page.encode())
    return {"markdown": str(out_dir / "report.md"), "html": str(out_dir / "report.html"),
            "plots": [str(out_dir / n) for n, d in r["plots"].items() if d]}
