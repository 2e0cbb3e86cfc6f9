"""Every read command with --pipeline on real stored runs of lab pipelines: budget, verdicts of
two models (kit's own bootstrap), one model's accuracy spread, advice (the loose generator
first), report, runs and the notebook; a changed shape said in one line; a wrong --pipeline one
line; and a pipeline's runs never read as kit's own."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from places import PIPELINES

import kit
from kit.analysis.advice import HOLD, output_advice
from kit.analysis.budget import output_budget
from kit.analysis.by_kind import pairs
from kit.analysis.verdicts import bootstrap, output_verdicts
from kit.app.audit import run_pairs
from kit.cli import main
from kit.core.errors import KitError
from kit.core.subject import of_pipeline
from kit.data.pipelines import add_pipeline
from kit.runs.planning.options import PlanOptions
from kit.runs.planning.plan import plan_file
from kit.runs.store import Store

HERE = PIPELINES
LAB, TWO = HERE / "lab.py", HERE / "two_models.py"
FACTORS = ("repeat", "seed", "seed:split")


def stored(path, factors, seeds=(0, 1, 2)):
    info = add_pipeline(path)
    plan = [p for f in factors for p in plan_file(f, info, PlanOptions(threads=(1,), seeds=seeds))]
    store = Store()
    run_pairs(plan, info, store)
    return info, store


def kit_cli(capsys, *argv):
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.slow
def test_two_models_give_kits_paired_bootstrap_verdicts_per_run_and_factor():
    info, store = stored(TWO, FACTORS + ("seed:forest",))
    v = output_verdicts(store, of_pipeline(info))
    assert v["models"] == ["p_lr", "p_rf"] and v["truth"] == "y_test" and not v["unfit"]
    assert set(v["factors"]) == {"repeat", "seed", "seed:split", "seed:forest"}
    for factor, a, b in pairs(store, of_pipeline(info), fit=False):
        for run in (a, b):  # the same numbers as kit's own bootstrap on the stored arrays
            want = bootstrap(
                {m: store.array(run, m) for m in ("p_lr", "p_rf")},
                store.array(run, "y_test"),
                models=("p_lr", "p_rf"),
            )
            for key in ("p_rf-p_lr acc", "p_rf-p_lr auc"):
                row = v["factors"][factor]["verdicts"][key]
                assert row["per_run"][run] == want[key]["verdict"]
                assert row["diff"][run] == want[key]["diff"]
    for f in v["factors"].values():
        for row in f["verdicts"].values():
            assert row["models"] == ["p_rf", "p_lr"]  # b-a, named whole (tolerances read them)
            assert row["stable"] == (row["changed"] == 0)
            assert sum(row["counts"].values()) == len(f["runs"])
    assert all(not r["changed"] for r in v["factors"]["repeat"]["verdicts"].values())


@pytest.mark.slow
def test_one_model_gives_the_spread_of_its_accuracy():
    info, store = stored(LAB, ("seed",))
    v = output_verdicts(store, of_pipeline(info))
    assert v["models"] == ["p_lr"] and not v["factors"]["seed"]["verdicts"]
    acc = [
        float(np.mean((store.array(r, "p_lr") > 0.5) == store.array(r, "y_test")))
        for r in v["factors"]["seed"]["runs"]
    ]
    s = v["factors"]["seed"]["spread"]["p_lr"]
    assert s["runs"] == 3 and s["min"] == min(acc) and s["max"] == max(acc)
    assert s["sd"] == pytest.approx(np.std(acc, ddof=1))


@pytest.mark.slow
def test_advice_names_the_loose_generator_first_then_each_seed_with_the_rule():
    info, store = stored(LAB, ("repeat", "seed:split", "seed:init"))
    b = output_budget(store, of_pipeline(info))
    a = output_advice(b, output_verdicts(store, of_pipeline(info)))
    assert a["steps"][0]["step"] == "loose" and a["steps"][0]["outputs"] == ["jitter"]
    seeds = [s for s in a["steps"] if s["step"] == "seed"]
    assert {s["seed"] for s in seeds} == {"split", "init"}
    assert all("jitter" not in s["outputs"] and s["rule"] == HOLD for s in seeds)
    assert next(s for s in seeds if s["seed"] == "split")["outputs"] == ["y_test", "p_lr"]


@pytest.mark.slow
def test_every_reader_takes_the_file_or_its_hash_prefix(capsys, tmp_path):
    info, store = stored(TWO, FACTORS)
    prefix = info["sha256"][:8]
    for ref in (str(TWO), prefix):
        code, out, err = kit_cli(capsys, "budget", "--pipeline", ref)
        assert code == 0, err
        assert out.startswith(f"pipeline two_models.py ({info['sha256'][:12]})")
        assert "p_rf-p_lr auc" in out  # the verdicts beside the budget
        code, out, _ = kit_cli(capsys, "verdicts", "--pipeline", ref, "--json")
        assert code == 0 and json.loads(out)["models"] == ["p_lr", "p_rf"]
        code, out, _ = kit_cli(capsys, "advise", "--pipeline", ref)
        assert code == 0 and "seed split reaches y_test, p_lr, p_rf" in out and HOLD in out
        code, out, _ = kit_cli(capsys, "runs", "--pipeline", ref, "--json")
        assert code == 0 and len(json.loads(out)) == 6  # base, replicate, 2 seed, 2 seed:split
    code, out, _ = kit_cli(capsys, "budget", "--pipeline", prefix, "--factor", "seed:split")
    assert code == 0 and "seed:split" in out and "repeat " not in out
    code, out, _ = kit_cli(capsys, "report", "--pipeline", prefix, "--out", str(tmp_path / "r"))
    assert code == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Verdicts" in md and "p_rf-p_lr acc" in md and "## What to fix first" in md
    page = (tmp_path / "r" / "report.html").read_text()
    # rendered as kit's own report is, by the same writers: headings, tables, no Markdown
    assert page.startswith("<!doctype html>") and "<style>" in page and "<pre>" not in page
    assert page.count("<h2>") >= 4 and page.count("<table>") >= 2 and "```" not in page
    assert "<td>p_rf-p_lr acc</td>" in page and "## " not in page and "](" not in page


@pytest.mark.parametrize(
    "argv, says",
    [
        (("budget", "--pipeline", "nowhere.py"), "no pipeline file nowhere.py"),
        (("verdicts", "--pipeline", "abcdef12"), "no stored pipeline with hash prefix abcdef12"),
        (("advise", "--pipeline", "lab"), "no pipeline file lab"),
        (
            ("verdicts", "--pipeline", "686"),
            "the hash prefix `kit runs` shows (at least 4 characters)",
        ),
        (("budget", "--pipeline", str(LAB), "--dataset", "synthetic"), "choose two different"),
        (
            ("budget", "--pipeline", str(LAB), "--factor", "seed:svd"),
            "no pairs of factor 'seed:svd'",
        ),
    ],
)
def test_a_wrong_pipeline_is_one_line(capsys, argv, says):
    code, out, err = kit_cli(capsys, *argv)
    assert code == 1 and says in err and err.strip().count("\n") == 0 and "Traceback" not in err


@pytest.mark.slow
def test_a_shape_a_seed_changes_is_one_line_naming_output_shapes_and_factor(capsys, tmp_path):
    f = tmp_path / "shapes.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a', 'b')\n"
        "KINDS = {'t': 'truth', 'p': 'probabilities', 'q': 'probabilities'}\n"
        "def run(seeds):\n    n = 4 + seeds['a']\n"
        "    return {'t': np.array([0, 1, 0, 1]), 'p': np.full(n, 0.25 + seeds['b'] / 4),"
        " 'q': np.full(4, 0.5)}\n"
    )
    info, store = stored(f, ("seed:a", "seed:b"), seeds=(0, 1))
    b = output_budget(store, of_pipeline(info))
    assert [(s["factor"], s["output"], s["shapes"]) for s in b["shapes"]] == [
        ("seed:a", "p", [[4], [5]])
    ]
    code, out, err = kit_cli(capsys, "budget", "--pipeline", str(f))
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("SHAPE"))
    assert (
        "SHAPE: p (probabilities) is (4,) in one run of seed:a and (5,) in the other"
        in " ".join(out.split())
    )
    assert line  # the line is said, and nothing measured of it
    v = output_verdicts(store, of_pipeline(info))
    assert (
        len(v["unfit"]) == 1
        and "p (probabilities) has shape [5] but t (truth) has shape [4]" in v["unfit"][0]
    )
    assert set(v["factors"]) == {"seed:b"}  # the pair with an unfit run is left out
    code, out, _ = kit_cli(capsys, "advise", "--pipeline", str(f))
    assert code == 0 and "SHAPE: p (probabilities)" in " ".join(out.split())
    # kit run says the paragraph, then fails: the shape is the user's mistake to fix
    code, out, err = kit_cli(
        capsys,
        "run",
        "--pipeline",
        str(f),
        "--factor",
        "seed:a",
        "--seeds",
        "0,1",
        "--threads",
        "1",
    )
    assert code == 1 and "SHAPE: p (probabilities)" in " ".join(out.split())
    # after the plan's line (stderr, as kit run's), the error: one line, the last
    said = err.strip().splitlines()
    assert "p's shape changes with seed:a" in said[-1] and said[-1].startswith("kit: error"), err
    assert sum(ln.startswith("kit: error") for ln in said) == 1, err


@pytest.mark.slow
def test_a_pipelines_runs_never_read_as_kits_own(capsys, tmp_path, kit_home):
    from stored import budget_store

    budget_store(tmp_path, home=kit_home).close()
    _, before, _ = kit_cli(capsys, "budget", "--json")
    info, store = stored(LAB, ("repeat",))  # stored last: still not the default dataset
    code, after, err = kit_cli(capsys, "budget", "--json")
    assert code == 0 and json.loads(after) == json.loads(before)
    assert "pipeline" not in err
    code, out, _ = kit_cli(capsys, "verdicts", "--json")
    assert code == 0 and set(json.loads(out)) == {"seeds", "threads", "repeat"}
    assert all(r.spec.pipeline == "" for r in store.runs("d" * 64))
    code, out, _ = kit_cli(capsys, "runs", "--json")
    assert {r["spec"].get("pipeline", "") for r in json.loads(out)} == {"", info["sha256"]}


@pytest.mark.slow
def test_the_notebook_reads_a_pipeline_by_file_or_hash():
    info, _ = stored(LAB, ("repeat", "seed"))
    k = kit.open()
    b = k.budget(pipeline=str(LAB))
    assert b.loc[("repeat", "jitter"), "pairs_changed"] == 1
    assert b.loc[("repeat", "emb"), "pairs_changed"] == 0 and b.attrs["loose"] == ["jitter"]
    v = k.verdicts(pipeline=info["sha256"][:10])
    assert v.attrs["models"] == ["p_lr"] and v.attrs["spread"]["seed"]["p_lr"]["runs"] == 3
    assert k.advice(pipeline=str(LAB))["step"].iloc[0] == "loose"
    assert len(k.runs(pipeline=str(LAB))) == 4  # base, replicate, seeds 1 and 2
    with pytest.raises(KitError, match="no stored pipeline"):
        k.budget(pipeline="fedcba98")


@pytest.mark.slow
def test_export_of_a_pipeline_and_compare_on_another_machine(capsys, tmp_path, monkeypatch):
    info, _ = stored(TWO, ("repeat", "seed:forest"), seeds=(0, 1))
    bundle = tmp_path / "lab.kit"
    code, out, err = kit_cli(
        capsys, "export", "--pipeline", info["sha256"][:12], "--arrays", "--out", str(bundle)
    )
    assert code == 0 and "3 runs" in out, err
    # a small bundle's size in the digits of the "wrote" line, not "0.0 MiB" before "0.01 MiB"
    assert re.search(r"arrays \(\d+\.\d\d MiB before compression\)", err) and "(0.0 MiB" not in err
    monkeypatch.setenv("KIT_HOME", str(tmp_path / "other"))  # another KIT_HOME: another host
    code, _, err = kit_cli(capsys, "compare", str(bundle))
    assert code == 1 and "whose file is not here" in err and err.strip().count("\n") == 0
    assert not (tmp_path / "other" / "index.sqlite").exists() or not Store().runs()
    code, out, err = kit_cli(capsys, "compare", str(bundle), "--pipeline", str(TWO), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["pairs"] == 3 and rep["identical"] == 3 and rep["answer"].startswith("reproduced")
    assert set(rep["per_run"][0]["outputs"]) == {"y_test", "p_lr", "p_rf"}


@pytest.mark.slow
async def test_the_tuis_setup_tab_chooses_a_pipeline_the_read_tabs_then_show():
    from textual.widgets import Input

    from kit.envs.platforms import Platform
    from kit.tui.app import KitApp

    info, store = stored(LAB, ("repeat",))
    plat = Platform("linux", "x86_64", cpu_flags=frozenset({"avx", "avx2"}), downloads=True)
    app = KitApp("synthetic", 120, platform=plat, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        field = pilot.app.query_one("#pipeline-file", Input)
        field.focus()
        await pilot.press(*"nowhere.py", "enter")
        assert pilot.app.pipeline is None  # a wrong file: said, and nothing chosen
        field.value = info["sha256"][:10]
        await pilot.press("enter")
        assert pilot.app.pipeline.sha256 == info["sha256"]
        await pilot.press("escape", "4")
        await pilot.app.workers.wait_for_complete()  # the tabs read in workers
        await pilot.pause()
        # the pipeline's budget in the scrolling pane: longer than a screen, its last line
        # (the loose generator's) is reached by scrolling, not cut off in the fixed header
        assert "your pipeline's budget" in str(pilot.app.query_one("#budget-head").render())
        assert pilot.app.query_one("#explain-scroll").display
        body = str(pilot.app.query_one("#explain-text").render())
        assert "pipeline lab.py" in body and "LOOSE GENERATOR: jitter" in " ".join(body.split())
        await pilot.press("5")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "models p_lr" in str(pilot.app.query_one("#verdicts-lab").render())
        await pilot.press("6")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        said = " ".join(str(pilot.app.query_one("#advice-lab").render()).split())
        assert "seed the loose generator" in said
        # the report exported from here is the pipeline's, in a folder named for it
        from kit.tui.advice import AdvicePane

        pane = pilot.app.query_one(AdvicePane)
        folder = pilot.app.query_one("#report-dir", Input).value
        assert f"pipeline-lab-{info['sha256'][:12]}" in folder
        pane.action_export()
        await pilot.app.workers.wait_for_complete()  # written in a worker, under a progress bar
        await pilot.pause()
        assert "pipeline lab.py" in (Path(folder) / "report.md").read_text()


@pytest.mark.slow
def test_kits_own_dataset_selection_never_picks_a_pipeline(capsys, tmp_path):
    f = tmp_path / "seeded.py"
    f.write_text(
        "import numpy as np\nSEEDS = ('a',)\ndef run(seeds):\n"
        "    return {'x': np.zeros(3) + seeds['a']}\n"
    )
    info, store = stored(f, ("repeat",))
    k = kit.open()
    assert info["sha256"][:12] not in repr(k) and "seeded.py" not in repr(k)
    for read in (k.budget, k.runs):
        with pytest.raises(KitError, match="no stored dataset"):
            read(dataset=info["sha256"][:6])
    with pytest.raises(KitError, match="pipeline= and dataset= choose two different things"):
        k.runs(dataset="x", pipeline=str(f))
    for extra in (("--dataset", "swissprot"), ("--n", "50")):
        code, _, err = kit_cli(capsys, "run", "--pipeline", str(f), "--factor", "repeat", *extra)
        assert code == 1 and err.strip().count("\n") == 0, err
        assert "--pipeline and --dataset/--n choose two different things: give one" in err


@pytest.mark.slow
def test_budget_factor_lists_the_pairs_behind_its_row_as_json_has_them(capsys):
    """As kit's own `kit budget --factor F`: one line per pair, its label and each output's
    headline number, the same numbers --json gives; not the factor's row again."""
    info, store = stored(TWO, FACTORS)
    code, out, err = kit_cli(capsys, "budget", "--pipeline", str(TWO), "--factor", "seed")
    assert code == 0, err
    code, js, _ = kit_cli(capsys, "budget", "--pipeline", str(TWO), "--factor", "seed", "--json")
    got = json.loads(js)["pairs"]
    assert [p["label"] for p in got] == ["seed 0 vs 1", "seed 0 vs 2"]
    assert "outputs that changed" not in out and "factor seed: 2 pair(s)" in out
    for p in got:
        line = next(x for x in out.splitlines() if x.startswith(p["label"])).split()[4:]
        o = p["outputs"]  # y_test, p_lr, p_rf in run's order
        assert line == [
            str(o["y_test"]["changed"]),
            str(o["p_lr"]["flips"]),
            str(o["p_rf"]["flips"]),
        ]


@pytest.mark.slow
def test_advice_on_seed_alone_names_the_files_own_seeds_in_its_command():
    from kit.views.tables import output_advice_text

    info, store = stored(TWO, ("repeat", "seed"), seeds=(0, 1))
    b = output_budget(store, of_pipeline(info))
    step = output_advice(b)["steps"][-1]
    assert step["step"] == "one-at-a-time" and step["seeds"] == ["split", "forest"]
    text = " ".join(output_advice_text(output_advice(b)).split())
    assert "kit run --pipeline two_models.py --factor seed:split,seed:forest" in text
    assert "seed:NAME" not in text


def test_a_difference_that_prints_as_one_value_is_no_range():
    from kit.views.tables import output_verdicts_text

    row = {
        "counts": {">": 2, "<": 0, "=": 0},
        "diff": {"a": 0.11700001, "b": 0.11700002},
        "stable": True,
        "changed": 0,
    }
    v = {
        "name": "x.py",
        "pipeline": "0" * 64,
        "why": "",
        "models": ["p_lr", "p_rf"],
        "truth": "y",
        "unfit": [],
        "factors": {"repeat": {"pairs": 1, "verdicts": {"acc": row}}},
    }
    text = output_verdicts_text(v)
    assert "0.117" in text and "0.117..0.117" not in text


def test_one_verdict_resting_on_homologs_is_singular():
    from types import SimpleNamespace

    from kit.analysis.homology_words import resting

    h = SimpleNamespace(
        rest_on_homologs=1, verdicts=[1, 2], runs=4, significant_only_under_clusters=0
    )
    assert resting(h).startswith("1 of the 2 verdicts rests on homologs")
    assert resting(SimpleNamespace(**{**vars(h), "rest_on_homologs": 2})).startswith(
        "2 of the 2 verdicts rest on homologs"
    )


@pytest.mark.slow
def test_advice_names_the_setting_that_changed_predictions_beside_the_seeds(capsys, tmp_path):
    """A file whose labels read the thread count: threads reaches predictions, so advice says
    to pin it, with the outputs it reached and their worst measure, ranked above a seed that
    only moves values (the order of harm kit's own advice uses)."""
    f = tmp_path / "threaded.py"
    f.write_text(
        "import os\nimport numpy as np\nSEEDS = ('noise',)\n"
        "KINDS = {'v': 'array', 'lab': 'labels'}\n"
        "def run(seeds):\n    t = int(os.environ['OMP_NUM_THREADS'])\n"
        "    rng = np.random.default_rng(seeds['noise'])\n"
        "    return {'v': np.array([1.0, 2.0, 3.0]) + rng.normal(0, 1e-9, 3),\n"
        "            'lab': np.array([0, 0, 1, 1, t % 2, 1 - t % 2])}\n"
    )
    info = add_pipeline(f)
    opts = PlanOptions(threads=(1, 2), seeds=(0, 1))
    store = Store()
    run_pairs(
        [p for x in ("repeat", "threads", "seed:noise") for p in plan_file(x, info, opts)],
        info,
        store,
    )
    steps = output_advice(output_budget(store, of_pipeline(info)))["steps"]
    assert [(s["step"], s.get("factor"), s["level"]) for s in steps] == [
        ("pin", "threads", "predictions"),
        ("seed", "seed:noise", "magnitudes"),
    ]
    (m,) = steps[0]["measures"]
    assert (m["output"], m["measure"]) == ("lab", "ari") and m["value"] < 1
    code, out, _ = kit_cli(capsys, "advise", "--pipeline", str(f))
    said = " ".join(out.split())
    assert code == 0 and "1. pin threads (" in said and "it changes predictions: lab (ARI" in said
    assert said.index("pin threads") < said.index("seed noise reaches v")
