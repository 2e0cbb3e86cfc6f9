"""The report's plots, checked on matplotlib's own objects before they become PNG bytes: no two
labels overprint, every text inside the figure, bars compared on a linear axis from zero, every
series in the legend, no two series in one colour. Data: small real stores
(tests/support/stored.py)."""

import numpy as np
import pytest
from stored import arrays, every_kind_store, put, spec

from kit.analysis.budget import budget
from kit.runs.planning.options import Pair


def _figures(monkeypatch):
    """Each figure a plot hands to png(), kept for its objects to be checked."""
    import kit.views.plots as plots

    figs, real = [], plots.png
    monkeypatch.setattr(plots, "png", lambda fig: figs.append(fig) or real(fig))
    import kit.views.svdplots as svdplots

    monkeypatch.setattr(svdplots, "png", plots.png)
    return figs


def _renderer(fig):
    """The figure drawn on an Agg canvas (pyplot's close leaves it a bare one), laid out as
    it is saved."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def _texts(fig):
    r = _renderer(fig)
    from matplotlib.text import Text

    ticks, shown = set(), set()
    for ax in fig.axes:  # a tick outside the view keeps its label but does not draw it
        for axis in (ax.xaxis, ax.yaxis):
            scale = axis.get_transform().transform  # compared where they are drawn (log)
            lo, hi = sorted(scale(np.array(axis.get_view_interval(), float)))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                labels = {id(tick.label1), id(tick.label2)}
                ticks |= labels
                at = scale(np.array([tick.get_loc()], float))[0]
                if lo - 1e-9 * (hi - lo) <= at <= hi + 1e-9 * (hi - lo):
                    shown |= labels
    return [
        (t, t.get_window_extent(r))
        for t in fig.findobj(Text)
        if t.get_visible()
        and t.get_text().strip()
        and t.figure is not None
        and (id(t) not in ticks or id(t) in shown)
    ]


def _readable(fig):
    """Every text inside the figure and no two overlapping."""
    texts = _texts(fig)
    box = fig.bbox
    for t, e in texts:
        assert (
            box.x0 - 1 <= e.x0 and e.x1 <= box.x1 + 1 and box.y0 - 1 <= e.y0 and e.y1 <= box.y1 + 1
        ), f"{t.get_text()!r} runs off the figure"
    for i, (a, ea) in enumerate(texts):
        for b, eb in texts[i + 1 :]:
            assert not ea.overlaps(eb), f"{a.get_text()!r} overprints {b.get_text()!r}"


def _nearly(st, tmp_path, factor, stack, rel):
    """A pair of `factor` whose embedding differs from the reference by about `rel`."""
    base = arrays(0)
    moved = dict(base, svd_rand=base["svd_rand"] * (1 + rel))
    b = spec(stack=stack, stack_id=stack[0] * 64)
    put(st, tmp_path, b, moved)
    return Pair(factor, "", spec(), b, f"{factor} a vs b")


@pytest.fixture
def store(tmp_path):
    """The hand-made every-kind store plus two environment factors that move the embedding
    by the same 1e-13 (their labels used to print on top of each other)."""
    st = every_kind_store(tmp_path)
    st.add_pairs(
        [
            _nearly(st, tmp_path, "blas", "blas-stack", 1e-13),
            _nearly(st, tmp_path, "sklearn", "sklearn-stack", 1.2e-13),
        ]
    )
    return st


def test_flips_are_bars_from_zero_each_model_its_colour_with_the_seed_row(store, monkeypatch):
    from kit.views.plots import plot_flips

    figs = _figures(monkeypatch)
    assert plot_flips(budget(store, "d" * 64)).startswith(b"\x89PNG")
    fig = figs[0]
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert "seed = 1 unit" in rows and "threads" in rows
    colours = {}
    for bar in ax.patches:
        colours.setdefault(tuple(bar.get_facecolor()), set()).add(bar.get_x())
        assert bar.get_x() == 0  # every bar starts at zero
    legend = {
        t.get_text(): tuple(h.get_facecolor())
        for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)
    }
    assert set(legend) == {"lr", "mlp", "hgb", "rf", "torch_mlp"}
    assert len(set(legend.values())) == len(legend)  # lr and torch_mlp were one blue
    assert set(colours) <= set(legend.values())  # every bar's colour is in the legend
    inside = ax.get_window_extent(_renderer(fig))
    for t, e in _texts(fig):
        if t in ax.texts:  # the "0", "n/a" and value labels stay in the frame
            assert inside.x0 <= e.x0 and e.x1 <= inside.x1 and inside.y0 <= e.y0 <= inside.y1
    _readable(fig)


def test_components_say_identical_only_of_zero_and_show_every_line(store, monkeypatch):
    from kit.views.svdplots import plot_components

    figs = _figures(monkeypatch)
    assert plot_components(budget(store, "d" * 64))
    fig = figs[0]
    main, strip = fig.axes[0], fig.axes[1]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("identical" in s for s in labels)  # 1e-13 is not identical
    assert labels[0] == "repeat" and labels[1] == "threads (coincides with repeat)"
    blas = next(k for k, s in enumerate(labels) if s.startswith("blas"))
    assert np.nanmax(main.lines[blas].get_ydata()) < 1e-11  # drawn on the log axis
    assert len(strip.lines[blas].get_xdata()) == 0  # nothing of it in the "0" strip
    assert len(strip.lines[0].get_xdata()) == 8  # repeat: every component exactly 0
    ys = {strip.lines[k].get_ydata()[0] for k in range(2)}
    assert len(ys) == 2  # repeat and threads in the strip do not sit on each other
    styles = [(ln.get_color(), ln.get_marker()) for ln in main.lines]
    assert len(set(styles)) == len(styles) == len(labels)
    assert [t.get_text() for t in strip.get_yticklabels()] == ["0: identical"]
    _readable(fig)


def test_an_all_identical_panel_says_so(tmp_path, monkeypatch):
    from stored import budget_store

    from kit.views.svdplots import plot_components

    figs = _figures(monkeypatch)
    assert plot_components(budget(budget_store(tmp_path), "d" * 64))
    right = figs[0].axes[2]  # the singular values: the same in every run of this store
    assert "bitwise identical" in " ".join(t.get_text() for t in right.texts)
    _readable(figs[0])


def test_amplification_labels_do_not_overprint(store, monkeypatch):
    from kit.views.plots import plot_amplification

    figs = _figures(monkeypatch)
    assert plot_amplification(budget(store, "d" * 64))
    ax = figs[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:4] == ["lr", "mlp", "hgb", "rf"]
    assert "blas, sklearn: embedding moved 1e-13 to 1.2e-13" in labels, labels
    series = [ln for ln in ax.lines]
    assert len(series) == len(labels)  # every line in the legend
    assert len({ln.get_color() for ln in series}) == len(series)
    # models at the same point stay visible: each later one smaller, drawn on top
    models = series[:4]
    assert [ln.get_markersize() for ln in models] == sorted(
        (ln.get_markersize() for ln in models), reverse=True
    )
    assert len({ln.get_markersize() for ln in models}) == 4
    assert [ln.get_zorder() for ln in models] == sorted(ln.get_zorder() for ln in models)
    _readable(figs[0])


def test_the_embedding_difference_is_dots_on_its_log_axis_not_bars(store, monkeypatch):
    """A bar on a log axis has no zero: 6.5e-16 drew a third as long as 1.2e-13."""
    from matplotlib.patches import Rectangle

    from kit.core.numbers import fmt
    from kit.views.plots import plot_embedding
    from kit.views.tables import factor_label

    figs = _figures(monkeypatch)
    b = budget(store, "d" * 64)
    assert plot_embedding(b).startswith(b"\x89PNG")
    ax = figs[0].axes[0]
    assert ax.get_xscale() == "log"
    assert not [p for p in ax.patches if isinstance(p, Rectangle)]  # no barh on the log axis
    rows = [r for r in b["rows"] if r.emb_rel_max is not None]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        factor_label(r.factor, r.level) for r in rows
    ]  # every factor
    dots = {(float(x), float(y)) for line in ax.get_lines() for x, y in line.get_xydata()}
    said = {t.get_text() for t in ax.texts}
    for j, r in enumerate(rows):
        if r.emb_rel_max > 0:  # a dot at its value, and the value beside it
            assert (r.emb_rel_max, j) in dots and fmt(r.emb_rel_max) in said
        else:
            assert "bitwise identical" in said and not any(y == j for _, y in dots)
    assert {"1.0e-13", "1.2e-13"} <= said
    _readable(figs[0])


def test_travel_draws_only_the_outputs_that_moved_scaled_at_the_top_too(monkeypatch):
    """A pipeline's travel.png was a row per output per factor: 12 outputs, 7 factors, 4299 px
    of mostly "identical", its scale only at the bottom (#43). Now only the outputs that moved
    are rows, a factor with none is no row, one line counts the identical ones, and the scale
    is at the top and the bottom."""
    from kit.analysis.by_kind import tally
    from kit.views.plots import plot_travel

    figs = _figures(monkeypatch)
    same = {f"out{k}": {"kind": "array", "identical": True} for k in range(10)}
    moved = {
        "kind": "probabilities",
        "identical": False,
        "rel": 1e-12,
        "flips": 0,
        "max_dp": 1e-12,
        "max_abs": 1e-12,
        "max_rel": 1e-12,
    }
    factors = {}
    for f, diffs in (
        ("repeat", same),
        ("threads", {**same, "p": moved}),
        (
            "shapes",
            {**same, "q": {"kind": "array", "identical": False, "unmeasured": True}, "p": moved},
        ),
    ):
        factors[f] = {"pairs": 0, "outputs": {}}
        tally(factors[f], diffs)
    assert plot_travel({"name": "mine.py", "factors": factors}, {"factors": {}}, {})
    ax = figs[-1].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "threads (1 pair)",
        "p (probabilities)",
        "shapes (1 pair)",
        "q (array)",
        "p (probabilities)",
    ]
    assert ax.get_title() == (
        "Not drawn, identical in every pair: repeat all 10; threads 10 of "
        "11; shapes 10 of 12 outputs."
    )
    assert not any(t.get_text() == "identical" for t in ax.texts)
    ticks = ax.xaxis.get_major_ticks()
    assert any(t.label2.get_visible() for t in ticks) and any(t.label1.get_visible() for t in ticks)
    assert "bits differ, by how much not measured (hashes only)" in [t.get_text() for t in ax.texts]
    _readable(figs[-1])
