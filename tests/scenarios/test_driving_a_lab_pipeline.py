"""What a stranger's drive of `kit run --pipeline` found (issue 29): `kit run` prints the rows of
the factors it ran (and points to the whole table), kit's own `kit run` too, `kit runs` fits 80
columns with whole-word headers, and a process factor's fresh and warm runs are told apart, as
stored."""

import re

import pytest
from places import PIPELINES

from kit.analysis.verdicts import run_label
from kit.cli import main
from kit.core.spec import RunSpec
from kit.data.pipelines import add_pipeline
from kit.runs.store import Store

TWO = str(PIPELINES / "two_models.py")


def kit_cli(capsys, *argv):
    code = main(list(argv))
    got = capsys.readouterr()
    assert code == 0, got.err
    return got.out


def _factor_rows(out: str) -> list:
    """The first cell of each row of the budget's table (below its ---- line, to a blank one)."""
    lines = out.splitlines()
    rule = next(i for i, x in enumerate(lines) if x.startswith("----"))
    rows = lines[rule + 1 :] + [""]
    return [x.split()[0] for x in rows[: rows.index("")] if x[:1].strip() and "  " in x]


@pytest.mark.slow
def test_kit_run_pipeline_prints_the_factors_it_ran_and_points_to_the_whole_table(capsys):
    kit_cli(
        capsys,
        "run",
        "--pipeline",
        TWO,
        "--factor",
        "repeat,seed:split",
        "--threads",
        "1",
        "--seeds",
        "0,1",
    )
    out = kit_cli(capsys, "run", "--pipeline", TWO, "--factor", "threads", "--threads", "1,2")
    assert _factor_rows(out) == ["threads"], out  # not the rows stored by the command before
    assert "repeat: every output identical" not in out  # a line of a factor not run now
    assert f"also stored: repeat, seed:split (every factor: kit budget --pipeline {TWO})" in out
    whole = kit_cli(capsys, "budget", "--pipeline", TWO)
    assert _factor_rows(whole) == ["repeat", "threads", "seed:split"]
    again = kit_cli(
        capsys,
        "run",
        "--pipeline",
        TWO,
        "--factor",
        "threads,repeat,seed:split",
        "--threads",
        "1,2",
        "--seeds",
        "0,1",
    )
    assert "also stored" not in again  # every stored factor was asked for


def _header_words(out: str) -> list:
    lines = out.splitlines()
    rule = next(i for i, x in enumerate(lines) if x.startswith("----"))
    return " ".join(lines[:rule]).split()


@pytest.mark.slow
def test_kit_runs_fits_80_columns_and_tells_a_fresh_process_from_a_warm_one(capsys, monkeypatch):
    kit_cli(
        capsys,
        "run",
        "--pipeline",
        TWO,
        "--factor",
        "process,seed:split",
        "--threads",
        "1",
        "--seeds",
        "0,1",
    )
    monkeypatch.setenv("COLUMNS", "80")
    every = kit_cli(capsys, "runs")
    mine = kit_cli(capsys, "runs", "--pipeline", TWO)
    for out, head in (
        (every, ["run", "dataset", "stack", "setting", "wall", "s"]),
        (mine, ["runs", "of", "pipeline", "two_models.py", "run", "stack", "setting", "wall", "s"]),
    ):
        assert max(len(x) for x in out.splitlines()) <= 80, out
        assert "\n\n" not in out  # one table, not split by columns
        words = _header_words(out)
        # each header whole: before, "what distinguishes it" broke into "distinguis" / "hes it"
        assert [w for w in words if not re.fullmatch(r"\(?[0-9a-f]{12}\)?", w)] == head, words
    store = Store()
    sha = add_pipeline(TWO)["sha256"]
    runs = {r.spec.process: r for r in store.runs() if r.spec.pipeline == sha and r.spec.process}
    assert set(runs) == {"fresh", "warm"}
    n = runs["warm"].manifest["runs_before"]  # what the worker counted, not what was asked
    rows = {x.split()[0]: " ".join(x.split()) for x in mine.splitlines() if x[:1].strip()}
    assert "1t seed 0 fresh process" in rows[runs["fresh"].id[:12]]
    assert "1t seed 0 warm process (after another run)" in rows[runs["warm"].id[:12]]
    assert n >= 1 and runs["fresh"].manifest["runs_before"] == 0


def test_kit_own_process_runs_are_named_fresh_and_warm_too():
    spec = RunSpec(dataset="d" * 64, stack="host", stack_id="s" * 64)
    assert run_label(spec.with_(process="fresh")) == "host 1t seed 0 fresh process"
    assert run_label(spec.with_(process="warm")) == "host 1t seed 0 warm process"
    assert "process" not in run_label(spec)


def _stored(path, factors):
    from kit.app.audit import run_pairs
    from kit.runs.planning.options import PlanOptions
    from kit.runs.planning.plan import plan_file

    info = add_pipeline(path)
    run_pairs(
        [p for f in factors for p in plan_file(f, info, PlanOptions(threads=(1,), seeds=(0, 1)))],
        info,
        Store(),
    )
    return info


@pytest.mark.slow
def test_the_pipeline_report_draws_how_far_each_factor_travels_and_its_verdicts(tmp_path, capsys):
    import matplotlib.image

    _stored(TWO, ("repeat", "seed:split"))
    out = kit_cli(capsys, "report", "--pipeline", TWO, "--out", str(tmp_path))
    assert "(2 of 2 plots)" in out and "not drawn" not in out
    md = (tmp_path / "report.md").read_text()
    for name in ("travel.png", "verdicts.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        h, w, _ = matplotlib.image.imread(tmp_path / name).shape  # a whole image, decoded
        assert h > 200 and w > 400
        assert f"]({name})" in md  # linked beside the report, as kit's own report links them
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "<figcaption>" in page  # inline


def test_no_runs_or_hashes_only_outputs_draw_no_figure(tmp_path):
    from kit.analysis.by_kind import tally
    from kit.app.verbs import report
    from kit.core.subject import of_pipeline
    from kit.views.plots import plot_travel
    from kit.views.report import write

    info = add_pipeline(TWO)  # kept, never run
    got = write(report(Store(), of_pipeline(info)), tmp_path)
    assert got["plots"] == [] and not list(tmp_path.glob("*.png"))
    md = (tmp_path / "report.md").read_text()
    assert "not drawn, no difference was measured" in md and "](travel.png)" not in md
    # a hashes-only bundle's pair: its bits differ, by how much is not known: no dot, no figure
    row = {"pairs": 0, "outputs": {}}
    tally(
        row,
        {
            "p_lr": {"kind": "probabilities", "identical": False, "unmeasured": True},
            "y_test": {"kind": "truth", "identical": True},
        },
    )
    b = {"name": "two_models.py", "factors": {"host": row}}
    none = {"factors": {}}
    assert plot_travel(b, none, {}) is None
    tally(
        row,
        {
            "p_lr": {
                "kind": "probabilities",
                "identical": False,
                "rel": 1e-12,
                "flips": 0,
                "max_dp": 1e-12,
                "max_abs": 1e-12,
                "max_rel": 1e-12,
            },
            "y_test": {"kind": "truth", "identical": True},
        },
    )
    assert plot_travel(b, none, {})[:8] == b"\x89PNG\r\n\x1a\n"  # a measured one is drawn


TINY = (
    "import numpy as np\n\nSEEDS = ('a',)\n\ndef run(seeds):\n"
    "    return {'x': np.zeros(2) + seeds['a']}\n"
)


@pytest.mark.slow
def test_a_pipeline_plan_is_estimated_from_its_own_stored_runs_only(tmp_path):
    """The TUI's pipeline Plan showed no time while kit's own Plan does: the estimate is the
    median wall time of the pipeline's stored runs for each run to do, None before any (an
    edited file is another pipeline: the old one's times are not its)."""
    from statistics import median

    from kit.app.audit import file_estimate, file_pairs, runs_of
    from kit.app.selection import pipeline_runs
    from kit.runs.planning.options import PlanOptions

    tiny, edited = tmp_path / "tiny.py", tmp_path / "edited.py"
    tiny.write_text(TINY)
    edited.write_text(TINY + "# edited\n")
    info = _stored(tiny, ("repeat",))
    store = Store()
    walls = [r.manifest["wall_s"] for r in pipeline_runs(store, info["sha256"])]
    assert len(walls) == 2 and all(w > 0 for w in walls)
    pairs = file_pairs(info, ("repeat", "seed"), PlanOptions(threads=(1,), seeds=(0, 1, 2)))
    _, todo = runs_of(pairs, store)
    assert len(todo) == 2  # seeds 1 and 2: seed 0 is the repeat's first run
    # a run after another in its worker (as the cores allow, one worker may make both)
    warm = [
        r.manifest["wall_s"]
        for r in pipeline_runs(store, info["sha256"])
        if r.manifest["runs_before"]
    ]
    used = warm or walls
    assert file_estimate(info, todo, store) == {
        "seconds": median(used) * 2,
        "median": median(used),
        "runs": len(used),
        "warm": bool(warm),
        "at_once": 1,
    }
    assert file_estimate(add_pipeline(edited), todo, store) is None


def test_kit_run_pipeline_asks_before_a_large_plan_as_kit_s_own_run(capsys, monkeypatch):
    import io

    import kit.app.audit as audit

    made = []
    monkeypatch.setattr(audit, "run_all", lambda specs, *a, **k: made.extend(specs))
    monkeypatch.setattr("sys.stdin", io.StringIO())  # a script's stdin: no terminal to ask
    big = ("run", "--pipeline", TWO, "--factor", "seed:split", "--threads", "1", "--seeds", "0-300")
    assert main(list(big)) == 1
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last == (
        "kit: error: 301 runs to do. A plan of more than 200 runs needs --yes when "
        "there is no terminal to ask."
    ), err
    assert "Traceback" not in err and not made and not Store().runs()  # nothing ran
    kit_cli(capsys, *big, "--yes")
    assert len(made) == 301
    made.clear()
    kit_cli(
        capsys,
        "run",
        "--pipeline",
        TWO,
        "--factor",
        "seed:split",
        "--threads",
        "1",
        "--seeds",
        "0-199",
    )  # 200 runs: not asked, as kit's own
    assert len(made) == 200


@pytest.mark.slow
def test_kit_own_run_prints_the_factors_it_ran_as_the_pipeline_run_does(capsys):
    small = ("--n", "120", "--threads", "1")
    kit_cli(capsys, "run", "--factor", "seed", *small, "--seeds", "0-1")
    out = kit_cli(capsys, "run", "--factor", "repeat", *small)
    assert _factor_rows(out) == ["repeat"], out  # not the seed row stored before
    assert "1 seed unit = " in out  # the unit every row is read in stays
    assert "also stored: seed (every factor: kit budget --n 120)" in out
    assert _factor_rows(kit_cli(capsys, "budget", "--n", "120")) == ["repeat", "seed"]
    again = kit_cli(capsys, "run", "--factor", "seed,repeat", *small, "--seeds", "0-1")
    assert _factor_rows(again) == ["repeat", "seed"] and "also stored" not in again


@pytest.mark.slow
def test_the_large_plan_question_says_the_pipelines_own_past_timings(tmp_path, capsys, monkeypatch):
    import io

    import kit.app.audit as audit

    tiny = tmp_path / "tiny.py"
    tiny.write_text(TINY)
    _stored(tiny, ("repeat",))  # two real runs: their wall times are the estimate
    monkeypatch.setattr(audit, "run_all", lambda *a, **k: None)
    monkeypatch.setattr("sys.stdin", io.StringIO())
    assert (
        main(
            [
                "run",
                "--pipeline",
                str(tiny),
                "--factor",
                "seed",
                "--threads",
                "1",
                "--seeds",
                "0-300",
                "--jobs",
                "2",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("kit: error: 300 runs to do (about ") and "from past timings" in last
    # the estimate counts the runs that go at once, as the plan's line before it says
    assert "up to 2 run(s) at once" in err and "from past timings, 2 at once)" in last


def test_a_forged_wall_time_is_not_part_of_the_estimate(monkeypatch):
    from types import SimpleNamespace

    import kit.app.audit as audit

    walls = [2.0, float("-inf"), float("nan"), float("inf"), -1.0, True, "3", 4.0]
    monkeypatch.setattr(
        audit,
        "pipeline_runs",
        lambda store, sha: [SimpleNamespace(manifest={"wall_s": w}) for w in walls],
    )
    est = audit.file_estimate({"sha256": "ab" * 32}, ["r1", "r2"], None)
    assert (est["median"], est["runs"], est["seconds"]) == (3.0, 2, 6.0)


def test_the_estimate_scales_warm_runs_and_counts_those_at_once(monkeypatch):
    """Drive 35 #2: 300 runs estimated at 17 min took about 2: the stored runs were each
    worker's first (the file's import), and runs going two at once were added one after
    another."""
    from types import SimpleNamespace

    import kit.app.audit as audit

    def runs(*made):  # (wall_s, runs_before)
        return lambda store, sha: [
            SimpleNamespace(manifest={"wall_s": w, "runs_before": n}) for w, n in made
        ]

    info, todo = {"sha256": "ab" * 32}, ["r"] * 5
    monkeypatch.setattr(audit, "pipeline_runs", runs((8.0, 0), (7.0, 0), (1.0, 1), (0.5, 3)))
    assert audit.file_estimate(info, todo, None) == {
        "seconds": 0.75 * 5,
        "median": 0.75,
        "runs": 2,
        "warm": True,
        "at_once": 1,
    }
    assert audit.file_estimate(info, todo, None, at_once=2)["seconds"] == 0.75 * 3  # 2, 2, 1
    monkeypatch.setattr(audit, "pipeline_runs", runs((8.0, 0), (6.0, None)))  # no warm run stored
    assert audit.file_estimate(info, todo, None, at_once=5)["seconds"] == 7.0
