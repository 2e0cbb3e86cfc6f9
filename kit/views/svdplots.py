"""The report's plots in the numerical literature's units: each SVD component's difference
against its index (do only the trailing components move?), and significant digits per stage."""

from __future__ import annotations

from ..analysis.compare import DIGIT_STAGES
from ..core import factors
from .plots import png, pyplot
from .tables import SHORT_STAGES, factor_label


def _rows(b: dict, key: str) -> list:
    """Rows worth a line: one per factor (svd-iters levels and the perturbation sweep are
    curves of their own elsewhere), with something to draw."""
    return [
        r
        for r in b["rows"]
        if getattr(r, key)
        and r.factor not in ("perturb", "svd-iters")
        and ((known := factors.get(r.factor)) is None or not known.torch)
    ]


_STYLES = [
    (c, m, ls)
    for c, m, ls in zip(
        (
            "#1f77b4",
            "#ff7f0e",
            "#2ca02c",
            "#d62728",
            "#9467bd",
            "#8c564b",
            "#e377c2",
            "#7f7f7f",
            "#bcbd22",
            "#17becf",
        ),
        "osv^Dx+P*h",
        ("-", "--", ":", "-.") * 3,
        strict=False,
    )
]
_PANELS = (
    ("components_median", "Which SVD components move (median over pairs)"),
    ("values_median", "Singular values (median over pairs)"),
)


def _same_as(rows: list, key: str, j: int) -> str | None:
    """The first earlier row whose values are exactly row j's (its line would hide under it)."""
    vals = getattr(rows[j], key)
    return next(
        (factor_label(r.factor, r.level) for r in rows[:j] if vals and getattr(r, key) == vals),
        None,
    )


def _label(rows: list, j: int) -> str:
    same = [_same_as(rows, key, j) for key, _ in _PANELS]
    name = factor_label(rows[j].factor, rows[j].level)
    if same[0] and same[0] == same[1]:
        return f"{name} (coincides with {same[0]})"
    notes = [
        f"= {s} in {where}"
        for s, where in zip(same, ("components", "singular values"), strict=True)
        if s
    ]
    return name + (f" ({'; '.join(notes)})" if notes else "")


def plot_components(b: dict) -> bytes | None:
    """Median over each factor's pairs of every component's relative difference (signs aligned)
    and of every singular value's, against the component index. A difference of exactly 0 has
    no place on a log axis: it is drawn in the strip below ("0, identical"), one offset row per
    factor; each factor has its own colour, marker and line style, and the legend says which
    lines coincide (the later one would hide under the earlier)."""
    from matplotlib.lines import Line2D

    rows = _rows(b, "components_median")
    if not rows:
        return None
    plt = pyplot()
    fig = plt.figure(figsize=(11, 4.8), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[6, 1])
    offset = [(k - (len(rows) - 1) / 2) * 0.7 / max(len(rows) - 1, 1) for k in range(len(rows))]
    for col, (key, title) in enumerate(_PANELS):
        ax = fig.add_subplot(grid[0, col])
        strip = fig.add_subplot(grid[1, col], sharex=ax)
        drawn = []
        for k, r in enumerate(rows):
            vals = getattr(r, key) or []
            c, mk, ls = _STYLES[k % len(_STYLES)]
            xs = range(1, len(vals) + 1)
            # later rows drawn smaller and on top: a coinciding earlier one still shows round it
            style = dict(
                color=c,
                marker=mk,
                ls=ls,
                ms=7 - 4 * k / len(rows),
                lw=1,
                zorder=2 + k,
                mfc="none" if k % 2 else c,
            )
            ax.plot(xs, [v if v else float("nan") for v in vals], **style)
            zeros = [x for x, v in zip(xs, vals, strict=True) if v == 0]
            strip.plot(zeros, [offset[k]] * len(zeros), **style)
            drawn += [v for v in vals if v]
        ax.set_yscale("log")
        ax.set_ylim(min(drawn + [1e-16]) / 3, 10)
        if not drawn:
            ax.text(
                0.5,
                0.5,
                "every factor: bitwise identical (the row below)",
                ha="center",
                va="center",
                fontsize=9,
                transform=ax.transAxes,
            )
        ax.set_ylabel("relative difference")
        ax.set_title(title)
        ax.tick_params(labelbottom=False)
        strip.set_ylim(-0.6, 0.6)
        strip.set_yticks([0], ["0: identical"])
        strip.set_xlabel("component index (1 = largest singular value)")
    fig.legend(
        handles=[
            Line2D(
                [], [], color=c, marker=mk, ls=ls, mfc="none" if k % 2 else c, label=_label(rows, k)
            )
            for k, (c, mk, ls) in enumerate(_STYLES[: len(rows)])
        ],
        loc="outside right center",
        fontsize=8,
    )
    return png(fig)


def plot_digits(b: dict) -> bytes | None:
    """The fewest significant digits any pair of each factor kept, stage by stage."""
    rows = _rows(b, "digits_min")
    if not rows:
        return None
    stages = [s for s in DIGIT_STAGES if any(s in r.digits_min for r in rows)]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.8))
    grid = [[r.digits_min.get(s, float("nan")) for s in stages] for r in rows]
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=15.7, aspect="auto")
    for i, vals in enumerate(grid):
        for j, v in enumerate(vals):
            if v == v:  # not NaN
                ax.text(
                    j,
                    i,
                    f"{v:.1f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 8 else "black",
                )
    ax.set_xticks(range(len(stages)), [SHORT_STAGES.get(s, s) for s in stages])
    ax.set_yticks(range(len(rows)), [factor_label(r.factor, r.level) for r in rows])
    fig.colorbar(im, ax=ax, label="significant decimal digits (float64: 15.7)")
    ax.set_title("Significant digits kept per stage (lowest over each factor's pairs)")
    return png(fig)
