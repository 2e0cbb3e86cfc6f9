"""The report's plots (matplotlib, PNG bytes): flips per factor, the embedding difference, power
iterations against flips, the amplification curves, and for outputs by their kinds how far each
factor's differences travel and the verdicts per factor. They draw what the budget holds."""

from __future__ import annotations

import io
import math
import textwrap

from ..analysis.amplify import curves
from ..analysis.compare import ALL_MODELS
from ..analysis.tolerances import changed_models, reach
from ..core import factors
from ..core.numbers import fmt
from ..worker.pipeline import MODELS
from .quoting import plot as _text
from .tables import factor_label, largest

_COLOURS = {
    "lr": "#4c72b0",
    "mlp": "#dd8452",
    "hgb": "#55a868",
    "rf": "#c44e52",
    "torch_mlp": "#8172b2",
}


# -- plots ------------------------------------------------------------------------------------
def pyplot():
    """matplotlib's pyplot on the Agg backend (imported on first use: kit starts faster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig) -> bytes:
    """A figure as PNG bytes, closed afterwards (for plots.py and svdplots.py alike)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return buf.getvalue()


def _value_text(v) -> str:
    return "n/a" if v is None else "0" if v == 0 else f"{v:.2g}"


def plot_flips(b: dict) -> bytes | None:
    """Median flips per factor and model, in seed units when there are seed runs, as bars on a
    linear axis from zero (lengths compare), each bar's value written at its end.

    The seed row is drawn too: it is the reference (1 seed unit for every model whose seed
    flips are not 0; "n/a" where they are, as no unit exists then). A model a row did not
    measure gets no bar and no label. When nothing flipped at all the plot says so.
    """
    from matplotlib.patches import Patch

    rows = [r for r in b["rows"] if r.models]  # a row of hash-only runs measured no model
    if not [r for r in rows if not factors.is_yardstick(r.factor)]:
        return None
    plt = pyplot()
    units = b["yardstick"] is not None
    models = [m for m in ALL_MODELS if any(m in r.models for r in rows)]
    value = (lambda d: d.flips_median_seed_units) if units else (lambda d: d.flips_median)
    # room for every model's bar and its label in each row (labels must not stack)
    fig, ax = plt.subplots(
        figsize=(9, len(rows) * (0.17 * len(models) + 0.25) + 1.4), layout="constrained"
    )
    h = 0.8 / len(models)
    positive = []
    for j, r in enumerate(rows):
        here = [m for m in models if m in r.models]  # centred on the row's label
        for i, m in enumerate(here):
            v = value(r.models[m])
            y = j + (i - (len(here) - 1) / 2) * h
            if v:
                positive.append(v)
                ax.barh(y, v, height=h * 0.9, color=_COLOURS[m])
            ax.annotate(
                _value_text(v),
                (v or 0, y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color=_COLOURS[m],
            )
    ax.set_xlim(0, max(positive) * 1.2 if positive else 1)
    if units and positive:
        ax.axvline(1, color="grey", lw=0.8, ls="--")
    if not positive:
        ax.text(
            0.5,
            0.5,
            "no factor flipped a prediction",
            ha="center",
            va="center",
            fontsize=9,
            transform=ax.transAxes,
        )
    ax.set_yticks(
        range(len(rows)),
        [
            factor_label(r.factor, r.level)
            + (" = 1 unit" if units and factors.is_yardstick(r.factor) else "")
            for r in rows
        ],
    )
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    ax.set_xlabel(
        "median flips in seed units (1 = what a different seed flips; n/a: the seed flipped none)"
        if units
        else "median flips (no seed runs: raw counts)"
    )
    ax.legend(
        handles=[Patch(color=_COLOURS[m], label=m) for m in models],
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        fontsize=8,
        frameon=False,
    )
    ax.set_title("How far each factor reaches the predictions")
    return png(fig)


def plot_embedding(b: dict) -> bytes | None:
    """The largest embedding difference per factor as a dot on a log axis, its value beside it:
    a bar on a log axis has no zero, so its length is not its size (6.5e-16 drew a third as long
    as 1.2e-13); bitwise identical factors are said, not drawn (0 has no place on a log axis)."""
    rows = [r for r in b["rows"] if r.emb_rel_max is not None]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.4))
    vals = [r.emb_rel_max for r in rows]
    floor, top = 1e-17, 1e3  # room right of 1 for the largest value's label
    ax.grid(axis="y", color="#dddddd", lw=0.6)  # a faint row line, not a bar: no length to read
    ax.set_axisbelow(True)
    drawn = [(j, v) for j, v in enumerate(vals) if v > 0]
    ax.plot([v for _, v in drawn], [j for j, _ in drawn], "o", color="#4c72b0", ms=7, ls="none")
    for j, v in enumerate(vals):
        if v > 0:
            ax.text(v * 2.5, j, fmt(v), va="center", fontsize=8)
        else:
            ax.text(floor * 2, j, "bitwise identical", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(floor, top)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
    ax.set_yticks(range(len(rows)), [factor_label(r.factor, r.level) for r in rows])
    ax.set_xlabel("largest relative embedding difference (randomized SVD, signs aligned)")
    ax.set_title("How far each factor moves the embedding")
    fig.tight_layout()  # the axis label inside the figure, as it is drawn
    return png(fig)


def plot_svd_iters(b: dict, advice: dict, pair_flips: dict | None = None) -> bytes | None:
    """Flips across seeds at each number of power iterations: every pair's flips as a point
    (a few seeds are a few points, not a trend), the median as the line, n under each level;
    the models on ARPACK's embedding at the right; SVD seconds on the second axis."""
    rows = sorted((int(r.level), r) for r in b["rows"] if r.factor == "svd-iters")
    if len(rows) < 2:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.4))
    xs = [x for x, _ in rows]
    solver = next((r for r in b["rows"] if r.factor == "svd-solver"), None)
    arpack_x = xs[-1] * 2
    pair_flips = pair_flips or {}
    for k, m in enumerate(MODELS):
        shift = 2 ** ((k - 1.5) * 0.06)  # side by side, on the log axis
        ax.plot(
            [x * shift for x in xs],
            [r.models[m].flips_median for _, r in rows],
            "-",
            color=_COLOURS[m],
            label=f"{m} (median)",
        )
        for level, comps in pair_flips.items():
            x = arpack_x if level == "svd-solver" else int(level)
            pts = [c.models[m].flips for c in comps if m in c.models]
            ax.plot([x * shift] * len(pts), pts, "o", color=_COLOURS[m], alpha=0.55, ms=4)
        if solver:
            ax.plot([arpack_x * shift], [solver.models[m].flips_median], "D", color=_COLOURS[m])
    ticks = xs + ([arpack_x] if solver else [])
    n = {str(x): r.pairs for x, r in rows}
    if solver:
        n["svd-solver"] = solver.pairs
    ax.set_xscale("log", base=2)
    ax.set_xticks(
        ticks,
        [f"{x}\nn={n[str(x)]}" for x in xs] + ([f"ARPACK\nn={n['svd-solver']}"] if solver else []),
    )
    ax.set_xlabel(
        "randomized-SVD power iterations (points: each seed pair; line: median"
        + ("; diamonds: the models on ARPACK's embedding)" if solver else ")")
    )
    ax.set_ylabel("flips across seeds")
    secs: dict = next(
        (
            r["basis"]["svd_seconds_by_level"]
            for r in advice["recommendations"]
            if r["kind"] == "solver" and r["basis"].get("factor") == "svd-iters"
        ),
        {},
    )
    if secs and all(secs.get(x) is not None for x in xs):
        ax2 = ax.twinx()
        ax2.plot(xs, [secs[x] for x in xs], "s--", color="grey", label="SVD seconds")
        arpack_s = next(
            (
                r["basis"]["svd_seconds"][1]
                for r in advice["recommendations"]
                if r["kind"] == "solver" and r["basis"].get("factor") == "svd-solver"
            ),
            None,
        )
        if solver and arpack_s:
            ax2.plot([arpack_x], [arpack_s], "s", color="grey")
        ax2.set_ylabel("SVD wall time, median (s, grey)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1), fontsize=8, frameon=False)
    ax.set_title("The cheapest reduction: power iterations against seed flips")
    return png(fig)


# environment factors' lines on the amplification plot: apart from the models' colours
_MARKS = ("#7f7f7f", "#8c564b", "#bcbd22", "#17becf", "#e377c2", "#000000")


def _environment_groups(rows: list) -> list:
    """[(emb_rel_max, [factor, ...], [their emb_rel_max, ...])]: environment factors whose embedding differences lie
    within a factor of 1.5 of each other share one line (their labels would overprint)."""
    pts = sorted(
        (r.emb_rel_max, r.factor)
        for r in rows
        if (f := factors.get(r.factor)) and f.environmental and r.emb_rel_max
    )
    groups: list = []
    for x, name in pts:
        if groups and x <= groups[-1][0] * 1.5:
            groups[-1][1].append(name)
            groups[-1][2].append(x)
        else:
            groups.append((x, [name], [x]))
    return groups


def plot_amplification(b: dict) -> bytes | None:
    """Flips against the perturbation's size, one line per model (log eps); where the
    environment factors' embedding differences sit on the same axis, in the legend (inline
    labels at one eps print over each other)."""
    cs = curves(b["rows"])
    if not cs:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4), layout="constrained")
    # models that flip the same at an eps draw on the same point: each a smaller marker than
    # the one before, on top, so every model stays visible as a ring inside the others
    for k, (m, c) in enumerate(cs.items()):
        ax.plot(
            [p["eps"] for p in c],
            [p["flips_median"] for p in c],
            "o-",
            color=_COLOURS.get(m, "black"),
            label=m,
            markersize=11 - 2 * min(k, 4),
            zorder=2 + k,
        )
    ax.set_xscale("log")
    ax.set_xlabel("relative size of the noise added to the embedding (eps)")
    ax.set_ylabel("median flips of test predictions")
    for k, (x, names, xs) in enumerate(_environment_groups(b["rows"])):
        moved = f"{xs[0]:.2g}" + (f" to {xs[-1]:.2g}" if f"{xs[-1]:.2g}" != f"{xs[0]:.2g}" else "")
        ax.axvline(
            x,
            color=_MARKS[k % len(_MARKS)],
            lw=1,
            ls=("--", ":", "-.")[k % 3],
            label=f"{', '.join(names)}: embedding moved {moved}",
        )
    if not any(p["flips_median"] for c in cs.values() for p in c):
        ax.text(
            0.5,
            0.8,
            "no eps flipped a prediction: every point is at 0",
            ha="center",
            va="center",
            fontsize=9,
            transform=ax.transAxes,
        )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title("Amplification: how each model turns input noise into flips", loc="left")
    return png(fig)


# -- a subject's outputs by their kinds (a pipeline file's report) ---------------------------
# how far a difference travelled (kit.analysis.tolerances.LEVELS), as the plots colour it
_LEVELS = {
    "bits": ("#8c8c8c", "bits: the bytes differ, no value moved"),
    "magnitudes": ("#4c72b0", "magnitudes: values moved, no prediction changed"),
    "predictions": ("#dd8452", "predictions: a prediction, label or neighbour changed"),
    "conclusions": ("#c44e52", "conclusions: a verdict between models changed"),
}
_VERDICT = {
    ">": ("#55a868", "b > a (95% interval above 0)"),
    "<": ("#c44e52", "b < a (95% interval below 0)"),
    "=": ("#8c8c8c", "= (95% interval holds 0)"),
}
_MODELS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2", "#937860", "#da8bc3")


def _distance(kind: str, worst: dict | None, size: int | None) -> tuple:
    """(the difference to draw, > 0, or None; the words beside it) of one output's worst pair,
    in its kind's terms: what is not a measured size (identical, hashes only, a shape) is said,
    never drawn (0 has no place on a log axis)."""
    if worst is None:
        return None, "identical"
    if "shape" in worst:
        return None, "shape changed: not compared"
    if worst.get("unmeasured"):
        return None, "bits differ, by how much not measured (hashes only)"
    if "ari" in worst:
        v = 1 - worst["ari"]
        return (
            (v, f"1 - ARI {fmt(v)}")
            if v > 0
            else (None, f"same partition (ARI 1), {worst.get('changed', 0)} renamed")
        )
    if "jaccard" in worst:
        v = 1 - worst["jaccard"]
        return (v, f"1 - Jaccard {fmt(v)}") if v > 0 else (None, "same neighbour sets")
    if "rel" in worst:
        flips = f", {worst['flips']} flips" if "flips" in worst else ""
        nan = f", {worst['nonfinite']} NaN/inf" if worst.get("nonfinite") else ""
        if worst["rel"] > 0:
            return worst["rel"], f"rel {fmt(worst['rel'])}{flips}{nan}"
        return None, f"bits differ, values equal (rel 0){flips}{nan}"
    if worst.get("changed") and size:
        return worst["changed"] / size, f"{worst['changed']}/{size} changed"
    return None, f"{worst.get('changed', 'some')} changed"


def plot_travel(b: dict, v: dict, sizes: dict) -> bytes | None:
    """Per factor, each output that moved: its worst measured difference as a dot on a log axis
    (scaled at the top and the bottom), coloured by how far it travelled (bits, magnitudes,
    predictions, conclusions), its value written beside it; what moved but was not measured
    (hashes only, a shape) is said in words. The outputs identical in every pair are not rows:
    one line of text under the title counts them per factor (a factor of 12 outputs drew 12
    rows of "identical"). None when no difference was measured (no pairs, every output
    identical, or hashes only): a figure would show none."""
    concluded = changed_models(v)
    rows, labels = [], []  # rows: (y, value, words, level) of output rows; labels: tick texts
    still = {}  # factor: (outputs identical in every pair, outputs)
    for f, r in b["factors"].items():
        moved = []
        for name, o in r["outputs"].items():
            if not o["worst"]:
                continue
            # each measure's largest over the pairs, as the table beside it says
            value, words = _distance(o["kind"], largest(o), sizes.get(name))
            level = reach(o, name in concluded.get(f, ())) if value else None
            if o["changed"] and f in ("repeat", "process"):  # the null experiment: a defect
                words += " - a loose generator"
            moved.append((value, words, level, f"{name} ({o['kind']})"))
        still[f] = (len(r["outputs"]) - len(moved), len(r["outputs"]))
        if not moved:
            continue
        labels.append((f"{f} ({r['pairs']} pair{'s' * (r['pairs'] != 1)})", True))
        for value, words, level, label in moved:
            rows.append((len(labels), value, words, level))
            labels.append((label, False))
    drawn = [x[1] for x in rows if x[1]]
    if not drawn:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.26 * len(labels) + 2.2), layout="constrained")
    lo = 10.0 ** (math.floor(math.log10(min(drawn))) - 2)
    hi = 10.0 ** (math.ceil(math.log10(max(drawn))) + 2)  # room for the largest value's words
    for y, value, words, level in rows:
        ax.axhline(y, color="#eeeeee", lw=0.6, zorder=0)  # a faint row line, not a bar
        if value and level is not None:  # a level is given to each measured value
            ax.plot([value], [y], "o", color=_LEVELS[level][0], ms=6, zorder=3)
            ax.text(value * 2, y, words, va="center", fontsize=7)
        else:
            ax.text(lo * 1.5, y, words, va="center", fontsize=7, color="#555555", style="italic")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    # the scale at the top too: a tall figure's first rows are read far from its bottom
    ax.tick_params(axis="x", top=True, labeltop=True)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # the first factor on top
    ax.set_yticks(range(len(labels)), [t for t, _ in labels], fontsize=8)
    for tick, (_, head) in zip(ax.get_yticklabels(), labels, strict=False):
        tick.set_fontweight("bold" if head else "normal")
    from matplotlib.patches import Patch

    seen = [lv for lv in _LEVELS if any(x[3] == lv for x in rows)]
    # below the axis label, outside what is drawn (it can never hide a dot or its words)
    fig.legend(
        handles=[Patch(color=_LEVELS[lv][0], label=_LEVELS[lv][1]) for lv in seen],
        loc="outside lower center",
        fontsize=7,
        frameon=False,
        ncol=2,
    )
    ax.set_xlabel(
        "worst difference over the factor's pairs (log): relative difference (floats), "
        "1 - ARI (labels),\n1 - Jaccard (neighbours), fraction changed (integers)",
        fontsize=8,
    )
    fig.suptitle(
        f"How far each factor's differences travel: {_text(b['name'])}, per output", fontsize=10
    )
    ax.set_title(
        textwrap.fill(_identical_line(still), 125), fontsize=7, color="#555555", style="italic"
    )
    return png(fig)


def _identical_line(still: dict) -> str:
    """The one line that stands for the rows not drawn: per factor, how many of its outputs
    were identical in every pair."""
    said = [
        f"{_text(f)} {'all ' if n == of else ''}{n}" + ("" if n == of else f" of {of}")
        for f, (n, of) in still.items()
        if n
    ]
    if not said:
        return "Every output moved in some pair of each factor."
    return "Not drawn, identical in every pair: " + "; ".join(said) + " outputs."


def _strip(ax, rows: list, colour_of, xlabel: str, words_of) -> None:
    """Rows of points (one per run) with words at the right: ``rows`` is [(label, points)]."""
    for j, (label, pts) in enumerate(rows):
        ax.axhline(j, color="#eeeeee", lw=0.6, zorder=0)
        for x, key in pts:
            ax.plot([x], [j], "o", color=colour_of(key), ms=5, alpha=0.75, zorder=3)
        ax.text(
            1.01,
            j,
            words_of(label, pts),
            va="center",
            fontsize=7,
            transform=ax.get_yaxis_transform(),
        )
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)


def _span(xs) -> str:
    lo, hi = min(xs), max(xs)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def plot_output_verdicts(v: dict, order=()) -> bytes | None:
    """Per factor: each model's accuracy in each of its runs (the spread across them); with two
    or more models, each verdict's difference b - a in each run, coloured by the bootstrap's
    verdict, and whether it holds across the factor's pairs. None without verdicts."""
    if v["why"] or not v["factors"]:
        return None
    models = v["models"]
    # the budget's order of factors (``order``), those it lacks after
    rank = {f: i for i, f in enumerate(order)}
    v = {**v, "factors": dict(sorted(v["factors"].items(), key=lambda fr: rank.get(fr[0], 1e9)))}
    colour = {m: _MODELS[i % len(_MODELS)] for i, m in enumerate(models)}
    acc = [
        (f"{f}: {m}", [(x, m) for x in r["accuracy"].get(m, [])])
        for f, r in v["factors"].items()
        for m in models
    ]
    verdicts = [
        (
            f"{f}: {key}",
            [(row["diff"][run], row["per_run"][run]) for run in r["runs"] if run in row["diff"]],
            row,
            r["pairs"],
        )
        for f, r in v["factors"].items()
        for key, row in r["verdicts"].items()
    ]
    plt = pyplot()
    n = len(acc) + len(verdicts)
    fig, axes = plt.subplots(
        2 if verdicts else 1,
        1,
        figsize=(9, 0.27 * n + 2.4 * (1 + bool(verdicts))),
        height_ratios=[len(acc) + 2, len(verdicts) + 2] if verdicts else None,
        layout="constrained",
        squeeze=False,
    )
    _strip(
        axes[0][0],
        acc,
        lambda m: colour[m],
        f"accuracy against {_text(v['truth'])} (each run a point)",
        lambda label, pts: f"{_span([x for x, _ in pts])} ({len(pts)} runs)",
    )
    axes[0][0].set_title(
        f"{_text(v['name'])}: each model's accuracy in the runs of each factor", fontsize=10
    )
    if verdicts:
        ax = axes[1][0]
        ax.axvline(0, color="grey", lw=0.8)
        held = {label: (row, pairs) for label, _, row, pairs in verdicts}

        def words(label, _):
            row, pairs = held[label]
            return "holds" if row["stable"] else f"CHANGES in {row['changed']} of {pairs} pairs"

        _strip(
            ax,
            [(label, pts) for label, pts, _, _ in verdicts],
            lambda k: _VERDICT[k][0],
            'difference b - a of the verdict "b-a metric" in each run (colour: the paired '
            "bootstrap's verdict)",
            words,
        )
        for tick, (_, _, row, _) in zip(ax.get_yticklabels(), verdicts, strict=False):
            tick.set_color("#c44e52" if not row["stable"] else "black")
        from matplotlib.patches import Patch

        ax.margins(x=0.08)  # zero, often an end of the points, off the frame
        fig.legend(
            handles=[Patch(color=c, label=t) for c, t in _VERDICT.values()],
            fontsize=7,
            frameon=False,
            ncol=3,
            loc="outside lower center",
        )
        ax.set_title("Verdicts per factor: does a conclusion hold across the runs?", fontsize=10)
    return png(fig)
