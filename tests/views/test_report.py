"""kit.views.report (laying out kit.app.verbs' report) and the verdicts/advise/report commands on a real store."""

import json
from pathlib import Path

from places import PIPELINES
from stored import budget_store

from kit.app.verbs import report
from kit.cli import main
from kit.core.subject import of_dataset
from kit.views.report import write


def test_report_files(tmp_path):
    st = budget_store(tmp_path)
    out = write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "## What to pin first" in md and "## The budget" in md and "## Verdict stability" in md
    assert "![Flips per factor](flips_seed_units.png)" in md
    # the seed yardstick is the unit above the ranking, not its item 1 (read as "pin your seed")
    pin = md.split("## What to pin first")[1].split("## The budget")[0]
    assert "the unit (a seed is named and recorded, not pinned): seed = 1 seed unit" in pin
    assert "| seed  " not in pin
    assert "| 1   | threads " in pin and "Name and record seed (" in pin
    assert "## Measured environments" in md and "test cpu" in md
    # flips, embedding difference, SVD components, significant digits
    assert page.count("data:image/png;base64,") == len(out["plots"]) == 4
    assert 'src="http' not in page and "<link" not in page  # self-contained
    for p in out["plots"]:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_report_tells_each_part_it_begins_as_many_as_it_counts(tmp_path):
    """The TUI's progress bar counts report_steps and write_steps: each part is told once, in
    order, for kit's own pipeline and for a pipeline file."""

    from kit.app.verbs.reporting import report_steps
    from kit.core.subject import of_pipeline
    from kit.data.pipelines import add_pipeline
    from kit.views.report import write_steps

    st = budget_store(tmp_path)
    two = add_pipeline(str(PIPELINES / "two_models.py"))
    for i, subject in enumerate((of_dataset("d" * 64, {}), of_pipeline(two))):
        told = []
        write(report(st, subject, step=told.append), tmp_path / f"rep{i}", step=told.append)
        assert told == [*report_steps(subject), *write_steps(subject)], subject
        assert told[-1] == "report.md and report.html" and any("plot" in t for t in told)


def test_cli_verdicts_advise_report(tmp_path, capsys, monkeypatch):
    budget_store(tmp_path)
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "home"))
    assert main(["verdicts", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    # the seed factor's runs are one run set, "seeds" (it was listed twice, also as "seed")
    assert set(rep) >= {"seeds", "threads", "repeat"} and "seed" not in rep
    assert len(rep["seeds"]) == 12
    assert main(["verdicts", "--set", "nope"]) == 1
    capsys.readouterr()
    assert main(["advise", "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert a["ranking"] and a["recommendations"]
    assert main(["advise"]) == 0 and "What to pin first" in capsys.readouterr().out
    assert main(["report", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").exists()
    # the plots it had nothing to draw for are left out and said, with what would draw them:
    # the report is what was asked, written (exit 0, #43)
    out = capsys.readouterr().out
    assert "(4 of 7 plots)" in out
    for line in (
        "not drawn: svd_iterations.png: kit run --factor svd-iters makes its pairs",
        "not drawn: amplification.png: kit run --factor perturb makes its pairs",
        "not drawn: homology.png: kit data homology NAME clusters the dataset",
    ):
        assert f"\n  {line}\n" in out, out
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == [
        "embedding_difference.png",
        "flips_seed_units.png",
        "significant_digits.png",
        "svd_components.png",
    ]


def _capture_figures(monkeypatch):
    """Keep each figure the report draws (its axes are checked, not its pixels)."""
    import kit.views.plots as report

    figs = []
    real = report.png

    def keep(fig):
        figs.append(fig)
        return real(fig)

    monkeypatch.setattr(report, "png", keep)
    return figs


def test_a_budget_without_flips_draws_no_broken_log_axis(tmp_path, monkeypatch):
    """Every flip 0: the log axis ran from 1e-3 to 1.25e-3 with clipped labels."""
    from stored import arrays, put, spec

    from kit.analysis.budget import budget
    from kit.runs.planning.options import Pair
    from kit.runs.store import Store
    from kit.views.plots import plot_flips

    st = Store(tmp_path / "h")
    put(st, tmp_path, spec(), arrays(0))
    put(st, tmp_path, spec(replicate=1), arrays(0))
    st.add_pairs([Pair("repeat", "", spec(), spec(replicate=1), "twice")])
    figs = _capture_figures(monkeypatch)
    assert plot_flips(budget(st, "d" * 64)).startswith(b"\x89PNG")
    ax = figs[0].axes[0]
    assert ax.get_xscale() == "linear" and "no factor flipped" in " ".join(
        t.get_text() for t in ax.texts
    )
    assert ax.get_legend().get_bbox_to_anchor() is not None  # outside the bars


def test_advice_is_a_list_and_changed_verdicts_lead(tmp_path):
    st = budget_store(tmp_path)
    write(report(st, of_dataset("d" * 64, {})), tmp_path / "rep")
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "<ul><li>The null experiment held" in page and "<p>- " not in page
    md = (tmp_path / "rep" / "report.md").read_text()
    rows = [ln for ln in md.splitlines() if " groups " in ln]
    stable = [ln.split("|")[7].strip() for ln in rows]
    assert stable == sorted(stable, key=lambda x: x != "NO")  # NO (changed) first


def test_the_power_iteration_plot_shows_each_pair_and_n(tmp_path, monkeypatch):
    from stored import arrays, put, spec

    from kit.core.spec import seeds
    from kit.runs.planning.options import Pair
    from kit.views.report import build

    st = budget_store(tmp_path)
    pairs = []
    for it in (10, 50):
        a = spec(svd_iters=it)
        put(st, tmp_path, a, arrays(0))
        for s in (1, 2, 3):
            b = spec(svd_iters=it, seeds=seeds(s))
            put(st, tmp_path, b, arrays(s))
            pairs.append(Pair("svd-iters", str(it), a, b, f"seed 0 vs {s}"))
    st.add_pairs(pairs)
    figs = _capture_figures(monkeypatch)
    assert build(report(st, of_dataset("d" * 64, {})))["plots"]["svd_iterations.png"]
    fig = next(f for f in figs if "power iterations" in f.axes[0].get_title())
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["10\nn=3", "50\nn=3"]
    points = [ln for ln in fig.axes[0].lines if ln.get_marker() == "o"]
    assert sum(len(ln.get_xdata()) for ln in points) == 2 * 3 * 4  # each pair, each model
