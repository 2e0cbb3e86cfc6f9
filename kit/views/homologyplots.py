"""The report's homology plot: each verdict's two intervals, and accuracy with and without a
train homolog per model. It draws what kit.analysis.homology measured, nothing else."""

from __future__ import annotations

from ..analysis.compare import ALL_MODELS
from .plots import png, pyplot

_PROTEIN, _CLUSTER = "#4c72b0", "#c44e52"
_WITH, _WITHOUT = "#55a868", "#8c8c8c"


def _legend(ax, entries) -> None:
    """A legend below the axes, outside what is drawn (it can never hide a bar or interval)."""
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=c, label=t) for c, t in entries],
        fontsize=7,
        ncol=2,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        frameon=False,
    )


def _intervals(ax, h) -> None:
    """Per verdict: the protein and the cluster bootstrap's median 95% intervals, one above the
    other, the difference as a dot, zero as a line; a verdict significant under proteins but not under clusters in
    some run is named in red."""
    rows = [v for v in h.verdicts if v.protein.get("lo") is not None]
    for j, v in enumerate(rows):
        for off, d, colour in ((-0.17, v.protein, _PROTEIN), (0.17, v.cluster, _CLUSTER)):
            ax.plot([d["lo"], d["hi"]], [j + off] * 2, color=colour, lw=3, solid_capstyle="butt")
        ax.plot([v.diff], [j], "o", color="black", ms=3, zorder=3)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(
        range(len(rows)), [v.verdict + (" *" if v.lost else "") for v in rows], fontsize=8
    )
    for label, v in zip(ax.get_yticklabels(), rows, strict=False):
        if v.lost:
            label.set_color(_CLUSTER)
    ax.invert_yaxis()
    ax.set_xlabel("difference b - a (median 95% interval over runs)", fontsize=8)
    ax.set_title(
        "Verdicts: protein vs cluster bootstrap\n(* significant, but not under clusters, "
        "in some run)",
        fontsize=9,
    )
    _legend(ax, ((_PROTEIN, "proteins resampled"), (_CLUSTER, "clusters resampled")))
    ax.tick_params(axis="x", labelsize=7)


def _leakage(ax, h) -> None:
    """Per model: accuracy on test proteins with a train homolog and without, as bars from zero
    (lengths compare), the range over runs as a whisker, each bar's value written on it."""
    models = [m for m in ALL_MODELS if m in h.models]
    width = 0.38
    for i, m in enumerate(models):
        x = h.models[m]
        for off, value, rng, colour in (
            (-width / 2, x.acc_with_homolog, x.acc_with_homolog_range, _WITH),
            (width / 2, x.acc_without_homolog, x.acc_without_homolog_range, _WITHOUT),
        ):
            if value is None:
                ax.text(i + off, 0.02, "n/a", ha="center", fontsize=7)
                continue
            ax.bar(i + off, value, width * 0.95, color=colour)
            if rng and rng[0] != rng[1]:
                ax.plot([i + off] * 2, rng, color="black", lw=0.8)
            ax.text(
                i + off,
                value / 2,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white",
                rotation=90,
            )
    ax.set_xticks(range(len(models)), models, fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("test accuracy (median over runs)", fontsize=8)
    ax.set_title(
        f"Leakage: {h.n_with_homolog:,} test proteins with a train homolog,\n"
        f"{h.n_without_homolog:,} without (medians over the runs)",
        fontsize=9,
    )
    _legend(ax, ((_WITH, "with a train homolog"), (_WITHOUT, "without")))
    ax.tick_params(axis="y", labelsize=7)


def plot_homology(h) -> bytes | None:
    """The two panels side by side, or None without a clustering or runs to show."""
    if h is None or not h.runs:
        return None
    plt = pyplot()
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10, 4.6), layout="constrained", gridspec_kw={"width_ratios": [1.5, 1]}
    )
    _intervals(left, h)
    _leakage(right, h)
    c = h.clustering
    fig.suptitle(
        f"Homology: MMseqs2 clusters at {c.get('identity', 0):.0%} identity, "
        f"{c.get('coverage', 0):.0%} coverage; {h.runs} runs",
        fontsize=10,
    )
    return png(fig)
