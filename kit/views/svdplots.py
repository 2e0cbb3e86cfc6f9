"""The report's plots in the numerical literature's units: each SVD component's difference
against its index (do only the trailing components move?), and significant digits per stage."""

from __future__ import annotations

from ..analysis.compare import DIGIT_STAGES
from ..core import factors
from .plots import png, pyplot
from .tables import SHORT_STAGES, factor_label

_FLOOR = 1e-17  # where "bitwise identical" is drawn on a log axis


def _rows(b: dict, key: str) -> list:
    """Rows worth a line: one per factor (svd-iters levels and the perturbation sweep are
    curves of their own elsewhere), with something to draw."""
    return [r for r in b["rows"] if getattr(r, key) and r.factor not in ("perturb", "svd-iters")
            and (factors.get(r.factor) is None or not factors.get(r.factor).torch)]


def plot_components(b: dict) -> bytes | None:
    """Median over each factor's pairs of every component's relative difference (signs aligned)
    and of every singular value's, against the component index."""
    rows = _rows(b, "components_median")
    if not rows:
        return None
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for r in rows:
        for ax, key in ((left, "components_median"), (right, "values_median")):
            vals = getattr(r, key)
            if not vals:
                continue
            same = not any(vals)
            ax.plot(range(1, len(vals) + 1), [max(v, _FLOOR) for v in vals], marker=".",
                    markersize=3, linewidth=1,
                    label=factor_label(r.factor, r.level) + (" (identical)" if same else ""))
    for ax, what in ((left, "component (column of U·S), signs aligned"), (right, "singular value")):
        ax.set_yscale("log")
        ax.set_ylim(_FLOOR / 2, 10)
        ax.set_xlabel("component index (1 = largest singular value)")
        ax.set_ylabel(f"relative difference of each {what}")
    left.set_title("Which SVD components move (median over pairs)")
    right.set_title("Singular values")
    right.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
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
                ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=7,
                        color="white" if v < 8 else "black")
    ax.set_xticks(range(len(stages)), [SHORT_STAGES.get(s, s) for s in stages])
    ax.set_yticks(range(len(rows)), [factor_label(r.factor, r.level) for r in rows])
    fig.colorbar(im, ax=ax, label="significant decimal digits (float64: 15.7)")
    ax.set_title("Significant digits kept per stage (lowest over each factor's pairs)")
    return png(fig)
