"""A lab pipeline's report plots: how far each factor's differences travel per output, and its
models' accuracy and verdicts per factor, as output_budget and output_verdicts measured them."""

from __future__ import annotations

import math

from ..analysis.tolerances import changed_models, reach
from ..core.numbers import fmt
from .lab import largest
from .plots import png, pyplot
from .quoting import plot as _text

# how far a difference travelled (kit.analysis.tolerances.LEVELS), as the plots colour it
_LEVELS = {"bits": ("#8c8c8c", "bits: the bytes differ, no value moved"),
           "magnitudes": ("#4c72b0", "magnitudes: values moved, no prediction changed"),
           "predictions": ("#dd8452", "predictions: a prediction, label or neighbour changed"),
           "conclusions": ("#c44e52", "conclusions: a verdict between models changed")}
_VERDICT = {">": ("#55a868", "b > a (95% interval above 0)"),
            "<": ("#c44e52", "b < a (95% interval below 0)"),
            "=": ("#8c8c8c", "= (95% interval holds 0)")}
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
        return (v, f"1 - ARI {fmt(v)}") if v > 0 else (None, f"same partition (ARI 1), "
                                                             f"{worst.get('changed', 0)} renamed")
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


def _sizes(runs) -> dict:
    """{output: its number of elements} from the stored runs' stage shapes."""
    out: dict = {}
    for r in runs:
        for name, s in r.stages.items():
            out.setdefault(name, math.prod(s.shape))
    return out


def plot_travel(b: dict, v: dict, sizes: dict) -> bytes | None:
    """Per factor and output, its worst measured difference as a dot on a log axis, coloured by
    how far it travelled (bits, magnitudes, predictions, conclusions), its value written beside
    it; identical outputs and what was not measured are said in words. None when no difference
    was measured (no pairs, every output identical, or hashes only): a figure would show none."""
    concluded = changed_models(v)
    rows, labels = [], []  # rows: (y, value, words, level) of output rows; labels: tick texts
    for f, r in b["factors"].items():
        labels.append((f"{f} ({r['pairs']} pair{'s' * (r['pairs'] != 1)})", True))
        for name, o in r["outputs"].items():
            # each measure's largest over the pairs, as the table beside it says
            value, words = _distance(o["kind"], largest(o) if o["worst"] else None,
                                     sizes.get(name))
            level = reach(o, name in concluded.get(f, ())) if value else None
            if o["changed"] and f in ("repeat", "process"):  # the null experiment: a defect
                words += " - a loose generator"
            rows.append((len(labels), value, words, level))
            labels.append((f"{name} ({o['kind']})", False))
    drawn = [x[1] for x in rows if x[1]]
    if not drawn:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.26 * len(labels) + 1.8), layout="constrained")
    lo = 10.0 ** (math.floor(math.log10(min(drawn))) - 2)
    hi = 10.0 ** (math.ceil(math.log10(max(drawn))) + 2)  # room for the largest value's words
    for y, value, words, level in rows:
        ax.axhline(y, color="#eeeeee", lw=0.6, zorder=0)  # a faint row line, not a bar
        if value:
            ax.plot([value], [y], "o", color=_LEVELS[level][0], ms=6, zorder=3)
            ax.text(value * 2, y, words, va="center", fontsize=7)
        else:
            ax.text(lo * 1.5, y, words, va="center", fontsize=7, color="#555555", style="italic")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # the first factor on top
    ax.set_yticks(range(len(labels)), [t for t, _ in labels], fontsize=8)
    for tick, (_, head) in zip(ax.get_yticklabels(), labels):
        tick.set_fontweight("bold" if head else "normal")
    from matplotlib.patches import Patch

    seen = [lv for lv in _LEVELS if any(x[3] == lv for x in rows)]
    # below the axis label, outside what is drawn (it can never hide a dot or its words)
    fig.legend(handles=[Patch(color=_LEVELS[lv][0], label=_LEVELS[lv][1]) for lv in seen],
               loc="outside lower center", fontsize=7, frameon=False, ncol=2)
    ax.set_xlabel("worst difference over the factor's pairs (log): relative difference (floats), "
                  "1 - ARI (labels),\n1 - Jaccard (neighbours), fraction changed (integers)",
                  fontsize=8)
    ax.set_title(f"How far each factor's differences travel: {_text(b['name'])}, per output",
                 fontsize=10)
    return png(fig)


def _strip(ax, rows: list, colour_of, xlabel: str, words_of) -> None:
    """Rows of points (one per run) with words at the right: ``rows`` is [(label, points)]."""
    for j, (label, pts) in enumerate(rows):
        ax.axhline(j, color="#eeeeee", lw=0.6, zorder=0)
        for x, key in pts:
            ax.plot([x], [j], "o", color=colour_of(key), ms=5, alpha=0.75, zorder=3)
        ax.text(1.01, j, words_of(label, pts), va="center", fontsize=7,
                transform=ax.get_yaxis_transform())
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)


def _span(xs) -> str:
    lo, hi = min(xs), max(xs)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def plot_lab_verdicts(v: dict, order=()) -> bytes | None:
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
    acc = [(f"{f}: {m}", [(x, m) for x in r["accuracy"].get(m, [])])
           for f, r in v["factors"].items() for m in models]
    verdicts = [(f"{f}: {key}", [(row["diff"][run], row["per_run"][run]) for run in r["runs"]
                                 if run in row["diff"]], row, r["pairs"])
                for f, r in v["factors"].items() for key, row in r["verdicts"].items()]
    plt = pyplot()
    n = len(acc) + len(verdicts)
    fig, axes = plt.subplots(2 if verdicts else 1, 1, figsize=(9, 0.27 * n + 2.4 * (1 + bool(verdicts))),
                             height_ratios=[len(acc) + 2, len(verdicts) + 2] if verdicts else None,
                             layout="constrained", squeeze=False)
    _strip(axes[0][0], acc, lambda m: colour[m],
           f"accuracy against {_text(v['truth'])} (each run a point)", lambda label, pts: f"{_span([x for x, _ in pts])} ({len(pts)} runs)")
    axes[0][0].set_title(f"{_text(v['name'])}: each model's accuracy in the runs of each factor",
                         fontsize=10)
    if verdicts:
        ax = axes[1][0]
        ax.axvline(0, color="grey", lw=0.8)
        held = {label: (row, pairs) for label, _, row, pairs in verdicts}

        def words(label, _):
            row, pairs = held[label]
            return "holds" if row["stable"] else f"CHANGES in {row['changed']} of {pairs} pairs"

        _strip(ax, [(label, pts) for label, pts, _, _ in verdicts], lambda k: _VERDICT[k][0],
               "difference b - a of the verdict \"b-a metric\" in each run (colour: the paired "
               "bootstrap's verdict)", words)
        for tick, (_, _, row, _) in zip(ax.get_yticklabels(), verdicts):
            tick.set_color("#c44e52" if not row["stable"] else "black")
        from matplotlib.patches import Patch

        ax.margins(x=0.08)  # zero, often an end of the points, off the frame
        fig.legend(handles=[Patch(color=c, label=t) for c, t in _VERDICT.values()], fontsize=7,
                   frameon=False, ncol=3, loc="outside lower center")
        ax.set_title("Verdicts per factor: does a conclusion hold across the runs?", fontsize=10)
    return png(fig)


def lab_plots(store, subject, b: dict, v: dict) -> dict:
    """{file name: PNG bytes or None} of pipeline ``subject``'s report, in the order it shows them."""
    from ..app.selection import lab_runs

    return {"travel.png": plot_travel(b, v, _sizes(lab_runs(store, subject.sha256))),
            "verdicts.png": plot_lab_verdicts(v, list(b["factors"]))}


_CAPTIONS = {"travel.png": "How far each factor's differences travel, per output",
             "verdicts.png": "Accuracy and verdicts per factor"}


def figures_md(plots: dict) -> str:
    """The report's Figures section: each PNG written beside report.md, linked; a plot not
    drawn is said with its reason (a blank axis would read as "nothing differs")."""
    out = ["## Figures\n"]
    for name, data in plots.items():
        out.append(f"![{_CAPTIONS[name]}]({name})\n" if data else
                   f"- {_CAPTIONS[name]}: not drawn, {_NOT_DRAWN[name]}\n")
    return "\n".join(out) + "\n"


_NOT_DRAWN = {"travel.png": "no difference was measured (no pairs stored, every output "
                            "identical, or hashes only)",
              "verdicts.png": "no verdicts (no truth and probabilities outputs, or no pairs)"}


def figures_html(plots: dict) -> str:
    """The PNGs inline (report.html stands alone, as kit's own does)."""
    import base64

    from .quoting import html

    return "".join(f'<figure><img alt="{html(_CAPTIONS[n])}" src="data:image/png;base64,'
                   f'{base64.b64encode(d).decode()}"><figcaption>{html(_CAPTIONS[n])}'
                   f"</figcaption></figure>\n" for n, d in plots.items() if d)
