"""The report's plots (matplotlib, PNG bytes): flips per factor, the embedding difference, power
iterations against flips, and the amplification curves. They draw what the budget holds."""

from __future__ import annotations

import io

from ..core import factors
from ..analysis.compare import ALL_MODELS
from ..worker.pipeline import MODELS
from .tables import factor_label

_COLOURS = {"lr": "#4c72b0", "mlp": "#dd8452", "hgb": "#55a868", "rf": "#c44e52",
            "torch_mlp": "#8172b2"}


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


def plot_flips(b: dict) -> bytes | None:
    """Median flips per factor and model: in seed units when there are seed runs (log axis).

    Zeros have no place on a log axis: they are written as "0" at the axis' left end, and when
    nothing flipped at all the plot says so on a plain axis instead of a broken log one.
    """
    # the yardstick is 1 by definition; a row of hash-only runs measured no model
    rows = [r for r in b["rows"] if not factors.is_yardstick(r.factor) and r.models]
    if not rows:
        return None
    plt = pyplot()
    units = b["yardstick"] is not None
    models = [m for m in ALL_MODELS if any(m in r.models for r in rows)]
    value = (lambda d: d.flips_median_seed_units) if units else (lambda d: d.flips_median)
    vals = {m: [value(r.models[m]) if m in r.models else None for r in rows] for m in models}
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
    ax.set_yticks(range(len(rows)), [factor_label(r.factor, r.level) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("median flips in seed units (1 = what a different seed flips; 0 written as 0)"
                  if units else "median flips (no seed runs: raw counts)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title("How far each factor reaches the predictions")
    return png(fig)


def plot_embedding(b: dict) -> bytes | None:
    rows = [r for r in b["rows"] if r.emb_rel_max is not None]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.4))
    vals = [r.emb_rel_max for r in rows]
    floor = 1e-17
    ax.barh(range(len(rows)), [max(v, floor) for v in vals], color="#4c72b0")
    for j, v in enumerate(vals):
        if v == 0:
            ax.text(floor * 2, j, "bitwise identical", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(floor, 10)
    ax.set_yticks(range(len(rows)), [factor_label(r.factor, r.level) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("largest relative embedding difference (randomized SVD, signs aligned)")
    ax.set_title("How far each factor moves the embedding")
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
        ax.plot([x * shift for x in xs], [r.models[m].flips_median for _, r in rows], "-",
                color=_COLOURS[m], label=f"{m} (median)")
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
    return png(fig)


def plot_amplification(b: dict) -> bytes | None:
    """Flips against the perturbation's size, one line per model (log eps)."""
    from ..analysis.amplify import curves

    cs = curves(b["rows"])
    if not cs:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, c in cs.items():
        ax.plot([p["eps"] for p in c], [p["flips_median"] for p in c], "o-",
                color=_COLOURS.get(m, "black"), label=m)
    ax.set_xscale("log")
    ax.set_xlabel("relative size of the noise added to the embedding (eps)")
    ax.set_ylabel("median flips of test predictions")
    for r in b["rows"]:  # where the environment factors sit on the same axis
        f = factors.get(r.factor)
        if f and f.environmental and r.emb_rel_max:
            ax.axvline(r.emb_rel_max, color="grey", lw=0.6, ls=":")
            ax.text(r.emb_rel_max, ax.get_ylim()[1] * 0.95, r.factor, rotation=90,
                    fontsize=7, va="top", color="grey")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title("Amplification: how each model turns input noise into flips")
    return png(fig)
