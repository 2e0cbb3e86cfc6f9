"""kit.analysis.budget: rows per factor, seed units from the seed pairs, confounds kept; and a lab
pipeline planned, run and stored like any run, then read back: the null experiment names
exactly the unseeded output, and each named seed changes what it reaches and nothing else."""

import numpy as np
import pytest
from places import PIPELINES, ROOT
from stored import arrays, budget_store, put, spec

from kit.analysis.budget import LOOSE, budget, confounds, output_budget, pair_details
from kit.analysis.by_kind import output_diff, pairs
from kit.app.audit import run_pairs
from kit.core.errors import KitError
from kit.core.spec import seeds
from kit.core.subject import of_pipeline
from kit.data.pipelines import add_pipeline
from kit.runs.planning.options import Pair, PlanOptions
from kit.runs.planning.plan import plan_file
from kit.runs.store import Store


@pytest.fixture
def store(tmp_path):
    return budget_store(tmp_path)


def test_rows_and_seed_units(store):
    b = budget(store, "d" * 64)
    rows = {r.factor: r for r in b["rows"]}
    assert [r.factor for r in b["rows"]] == ["repeat", "threads", "seed"]
    assert b["yardstick"]["flips"]["hgb"] == 5.0 and b["yardstick"]["pairs"] == 2
    assert rows["repeat"].all_identical == 1 and rows["repeat"].emb_rel_max == 0
    hgb = rows["threads"].models["hgb"]
    assert hgb.flips_median == 2 and hgb.flips_median_seed_units == pytest.approx(0.4)
    assert rows["threads"].models["lr"].flips_median_seed_units is None  # 0 seed flips
    assert rows["seed"].models["hgb"].flips_max == 6
    assert rows["seed"].emb_rel_seed_units > 1  # largest over the median
    assert b["note"] is None


def test_thread_settings_are_explained_but_a_kernel_change_is_a_confound(store):
    rows = {r.factor: r for r in budget(store, "d" * 64)["rows"]}
    assert rows["threads"].confounds == {"blas@numpy:architecture": ["Haswell -> Prescott"]}
    assert rows["repeat"].confounds == {}
    assert confounds("repeat", {"env:OMP_NUM_THREADS": ["1", "2"]})  # not explained for repeat


def test_without_seed_pairs_the_budget_says_so(tmp_path):
    st = Store(tmp_path / "h")
    put(st, tmp_path, spec(), arrays(0))
    put(st, tmp_path, spec(replicate=1), arrays(0))
    st.add_pairs([Pair("repeat", "", spec(), spec(replicate=1), "x")])
    b = budget(st, "d" * 64)
    assert b["yardstick"] is None and "kit run --factor seed" in b["note"]
    assert b["rows"][0].models["rf"].flips_median_seed_units is None


def test_pair_details(store):
    rows = pair_details(store, "d" * 64, "threads")
    assert len(rows) == 1 and rows[0]["comparison"].models["hgb"].flips == 2
    assert "blas@numpy:architecture" in rows[0]["confounds"]


def test_a_model_that_predicts_one_class_is_flagged(tmp_path):
    """At 600 built-in proteins the MLP predicted the negative class everywhere: 0/0 flips that
    looked perfectly stable. Every row and the yardstick now say which runs did so."""
    from kit.views.tables import budget_text, flips_cell

    st = Store(tmp_path / "h")
    base = arrays(0)
    base["mlp"] = np.full_like(base["mlp"], 0.2)  # below 0.5 for every protein
    other = dict(base, svd_rand=arrays(1)["svd_rand"])
    put(st, tmp_path, spec(), base)
    put(st, tmp_path, spec(seeds=seeds(1)), other)
    st.add_pairs([Pair("seed", "", spec(), spec(seeds=seeds(1)), "seed 0 vs 1")])
    b = budget(st, "d" * 64)
    mlp = b["rows"][0].models["mlp"]
    assert mlp.flips_max == 0 and mlp.one_class_runs == 2
    assert b["rows"][0].models["lr"].one_class_runs == 0
    assert b["yardstick"]["one_class"] == ["mlp"]
    assert flips_cell(mlp).endswith("1-class")
    assert "mlp predicted a single class for every test protein" in budget_text(b)


def test_the_verdicts_legend_is_said_only_over_a_column_with_a_value(tmp_path):
    """ "conclusions: most of the 12 verdicts changed in one pair" was printed over every table,
    read as a finding, even over a verdicts column of "-" only (#43): a legend of the column,
    said where the column holds a value."""
    from dataclasses import replace

    from kit.views.tables import budget_text

    st = Store(tmp_path / "h")
    put(st, tmp_path, spec(), arrays(0))
    put(st, tmp_path, spec(seeds=seeds(1)), arrays(1))
    st.add_pairs([Pair("seed", "", spec(), spec(seeds=seeds(1)), "seed 0 vs 1")])
    b = budget(st, "d" * 64)
    legend = "verdicts column: the most of the 12 verdicts that changed in any one pair"
    assert b["rows"][0].verdicts_changed_max is not None
    assert legend in " ".join(budget_text(b).split())
    none = {**b, "rows": [replace(r, verdicts_changed_max=None) for r in b["rows"]]}
    text = budget_text(none)
    assert "verdicts" in text and "12 verdicts" not in " ".join(text.split())


# a lab pipeline's budget (kit.analysis.budget.output_budget, by_kind's comparison)

LAB = PIPELINES / "lab.py"


@pytest.fixture
def stored():
    info = add_pipeline(LAB)
    opts = PlanOptions(threads=(1,), seeds=(0, 1))
    plan = [
        p for f in ("repeat", "seed", "seed:split", "seed:init") for p in plan_file(f, info, opts)
    ]
    store = Store()
    run_pairs(plan, info, store)
    return info, store, plan


@pytest.mark.slow
def test_planned_pairs_are_stored_and_read_back(stored):
    info, store, plan = stored
    assert len({s.run_id for p in plan for s in (p.a, p.b)}) == 5  # the base run is shared
    assert sorted((p.factor, p.a.run_id, p.b.run_id) for p in plan) == pairs(
        store, of_pipeline(info), fit=False
    )
    assert all(r.spec.pipeline == info["sha256"] for r in store.runs(info["sha256"]))
    assert store.datasets()[info["sha256"]]["name"] == "pipeline lab.py"
    split = next(p for p in plan if p.factor == "seed:split")
    assert split.a.seed_dict == {"split": 0, "init": 0} and split.b.seed_dict == {
        "split": 1,
        "init": 0,
    }


@pytest.mark.slow
def test_the_null_experiment_names_exactly_the_unseeded_output(stored):
    info, store, _ = stored
    b = output_budget(store, of_pipeline(info))
    assert b["loose"] == ["jitter"]
    assert b["loose_line"].startswith(
        "jitter differs between runs with the same named seeds: "
        "a generator is not seeded by the named seeds (split, init)"
    )
    repeat = b["factors"]["repeat"]["outputs"]
    assert list(repeat) == ["emb", "clusters", "y_test", "p_lr", "jitter"]  # run's order
    assert 0 < repeat["jitter"]["worst"]["rel"] < 1e-6  # noise of 1e-9: measured, not flagged


@pytest.mark.slow
def test_each_seed_changes_what_it_reaches_and_nothing_else(stored):
    info, store, _ = stored
    f = output_budget(store, of_pipeline(info))["factors"]

    def changed(factor):
        return {n for n, o in f[factor]["outputs"].items() if o["changed"]} - {"jitter"}

    assert changed("seed:split") == {"y_test", "p_lr"}
    assert changed("seed:init") == {"emb", "clusters", "p_lr"}
    assert changed("seed") == {"emb", "clusters", "y_test", "p_lr"}
    assert output_budget(store, of_pipeline(info))["inert"] == []
    assert "ari" in f["seed:init"]["outputs"]["clusters"]["worst"]
    assert "flips" in f["seed:split"]["outputs"]["p_lr"]["worst"]


@pytest.mark.slow
def test_rows_are_in_kits_factor_order_with_each_seed_in_the_files_seeds_order(stored):
    info, store, _ = stored
    # planned as seed:split, seed:init, repeat, seed: alphabetical would put repeat first, then
    # seed, seed:init, seed:split; kit's table puts repeat first and SEEDS orders split, init
    assert list(output_budget(store, of_pipeline(info))["factors"]) == [
        "repeat",
        "seed",
        "seed:split",
        "seed:init",
    ]


def test_plans_refuse_what_the_file_does_not_name():
    info = add_pipeline(LAB)
    with pytest.raises(KitError, match="lab.py names no seed 'svd': its SEEDS are split, init"):
        plan_file("seed:svd", info, PlanOptions(threads=(1,)))
    with pytest.raises(KitError, match="a factor of kit's own pipeline, not for a pipeline file"):
        plan_file("svd-iters", info, PlanOptions(threads=(1,)))


def test_kinds_choose_the_measure():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(20, 3))
    flipped = e * np.array([1, -1, 1])
    assert output_diff(e, flipped, "embedding")["rel"] == 0  # sign-aligned
    assert output_diff(e, flipped, "array")["rel"] > 0.5  # an array is not sign-aligned
    assert output_diff(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), "labels")["ari"] == 1.0
    p = output_diff(np.array([0.4, 0.7]), np.array([0.6, 0.7]), "probabilities")
    assert p["flips"] == 1 and p["max_dp"] == pytest.approx(0.2)
    assert output_diff(np.zeros(3), np.zeros(4), "array") == {"shape": [[3], [4]]}
    assert "{seeds}" in LOOSE


def _kit(*args):
    import os
    import subprocess
    import sys

    root = ROOT
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.slow
def test_kit_run_pipeline_end_to_end_and_kit_runs_shows_the_file():
    got = _kit("run", "--pipeline", str(LAB), "--factor", "repeat", "--threads", "1")
    # its runs are stored and its budget printed; the null experiment failed, so exit 1, as
    # `kit doctor --pipeline` exits on the same finding (it was 0: a script read a success)
    assert got.returncode == 1, got.stderr
    assert "pipeline lab.py (" in got.stdout and "LOOSE GENERATOR: jitter differs" in got.stdout
    assert (
        got.stderr.strip().endswith(
            "exit 1, as `kit doctor --pipeline` exits; seed it from a named seed"
        )
        and "Traceback" not in got.stderr
    )
    assert _kit("doctor", "--pipeline", str(LAB)).returncode == 1
    sha = add_pipeline(LAB)["sha256"]
    runs = _kit("runs")
    assert runs.stdout.count(f"pipeline lab.py {sha[:12]}") == 2
    bad = _kit("run", "--pipeline", str(LAB), "--factor", "seed:svd", "--threads", "1")
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0
    assert "lab.py names no seed 'svd'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_pairs_are_the_planned_ones_at_any_seeds_never_guessed_from_specs(stored):
    """seed:split and seed:init planned again at seeds 5 and 6 are two more pairs each, and
    the all-5 run is not a `seed` pair against the all-0 one (it was never planned as such)."""
    info, store, plan = stored
    more = [
        p
        for f in ("seed:split", "seed:init")
        for p in plan_file(f, info, PlanOptions(threads=(1,), seeds=(5, 6)))
    ]
    run_pairs(more, info, store)
    rows = output_budget(store, of_pipeline(info))["factors"]
    assert rows["seed:split"]["pairs"] == rows["seed:init"]["pairs"] == 2
    assert rows["seed"]["pairs"] == 1 and rows["repeat"]["pairs"] == 1
    assert set(pairs(store, of_pipeline(info), fit=False)) == {
        (p.factor, p.a.run_id, p.b.run_id) for p in plan + more
    }


def test_a_changed_prediction_is_counted_once_per_row_whatever_the_probabilities_shape():
    p = np.array([0.2, 0.6, 0.7, 0.4, 0.9, 0.1])
    q = np.array([0.6, 0.6, 0.3, 0.4, 0.9, 0.1])  # rows 0 and 2 cross 0.5
    two = lambda x: np.stack([1 - x, x], axis=1)  # noqa: E731  predict_proba of two classes
    assert output_diff(p, q, "probabilities")["flips"] == 2
    assert output_diff(two(p), two(q), "probabilities")["flips"] == 2  # not 4: one per row
    # three classes: a crossing of 0.5 that keeps the argmax is no changed prediction
    a = np.array([[0.55, 0.25, 0.2], [0.2, 0.3, 0.5]])
    b = np.array([[0.45, 0.35, 0.2], [0.2, 0.5, 0.3]])  # row 0 keeps class 0, row 1 moves
    assert output_diff(a, b, "probabilities")["flips"] == 1
    # the verdicts score the same column the flips are counted on
    from kit.analysis.compare import positive_class, predictions

    assert (positive_class(two(p)) == p).all() and positive_class(a) is None
    assert (predictions(two(p)) == (p > 0.5)).all() and list(predictions(a)) == [0, 2]


def test_a_rows_numbers_are_each_measures_largest_over_its_pairs():
    """The worst pair (fewest digits, then largest rel) may not hold the most flips: the row
    under "largest difference" shows each measure's own largest, as --json's most has it."""
    from kit.analysis.by_kind import tally
    from kit.views.tables import output_budget_text

    row = {"pairs": 0, "outputs": {}}
    for flips, dp, rel in ((58, 0.96, 0.9), (62, 1.0, 0.8)):
        tally(
            row,
            {
                "p": {
                    "kind": "probabilities",
                    "identical": False,
                    "flips": flips,
                    "max_dp": dp,
                    "rel": rel,
                    "digits": 0.0,
                }
            },
        )
    o = row["outputs"]["p"]
    assert o["worst"]["flips"] == 58 and o["most"]["flips"] == 62
    text = output_budget_text(
        {
            "name": "x.py",
            "pipeline": "0" * 64,
            "factors": {"seed": row},
            "loose_line": "",
            "inert": [],
        }
    )
    assert "p (62 flips, max dp 1, rel 0.9, 0 digits)" in text


def test_an_embedding_s_digits_are_read_after_its_signs_are_aligned_median_and_worst():
    """The issue's `reduced`: a sign-flipped column read as lost digits (1.8 median), 6.3 once
    aligned; and a plain array's digits are its median element's, the worst said beside."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 3))
    b = a * np.array([1, -1, 1]) + 1e-9 * rng.normal(size=(50, 3))
    d = output_diff(a, b, "embedding")
    assert d["sign_flips"] == 1 and d["digits"] > 8 and 5 < d["digits_worst"] < d["digits"]
    plain = output_diff(a, b, "array")  # an array's signs are its values: nothing aligned
    assert plain["digits_worst"] < 1 < d["digits_worst"]
    x = np.array([1.0, 1.0, 1.0, 100.0])
    got = output_diff(x, x + np.array([0, 0, 0, 50.0]), "array")
    assert got["digits"] > 15 and got["digits_worst"] < 1  # median kept, worst named
    from kit.views.tables import measure

    assert "digits median, " in measure(got) and " worst" in measure(got)


def test_metrics_classes_and_centroids_are_each_compared_as_their_kind_says():
    from kit.analysis.tolerances import from_rows

    # metrics: a 5% silhouette move beside a huge inertia is the worst element, not hidden
    m = output_diff(np.array([6350.0, 0.40]), np.array([6350.5, 0.42]), "metrics")
    assert m["worst_metric"] == 1 and m["rel"] == pytest.approx(0.05)
    # classes: numbering matters (labels would call a renaming ARI 1)
    c = output_diff(np.array([0, 1, 1, 2]), np.array([1, 0, 0, 2]), "classes")
    assert c["changed"] == 3 and "ari" not in c
    # centroids: the same clusters in another order are the same clusters
    a = np.array([[0.0, 0.0], [10.0, 10.0], [5.0, 0.0]])
    got = output_diff(a, a[[2, 0, 1]] + 1e-12, "centroids")
    assert got["relabelled"] and got["max_abs"] < 1e-11
    assert not output_diff(a, a + 1e-12, "centroids")["relabelled"]
    from kit.analysis.by_kind import MAX_MATCHED

    big = np.zeros((MAX_MATCHED + 1, 2))  # beyond the bound: by position, never k x k memory
    assert "relabelled" not in output_diff(big, big + 1.0, "centroids")
    # a metrics vector's tolerance is rtol per element, atol 0; the kinds reach as they say
    rows = {
        "sklearn": {
            "pairs": 1,
            "outputs": {
                "scores": {
                    "kind": "metrics",
                    "changed": 1,
                    "most": {"max_abs": 0.5, "max_rel": 0.05},
                },
                "pred": {"kind": "classes", "changed": 1, "most": {"changed": 3}},
            },
        }
    }
    by = {
        r["output"]: r
        for r in from_rows(
            rows, {"pipeline": "a" * 64, "name": "x.py"}, spreads={"scores": 6350.0}
        )["tolerances"]
    }
    assert (by["scores"]["rtol"], by["scores"]["atol"], by["scores"]["pin"]) == (0.1, 0.0, False)
    assert by["pred"]["level"] == "predictions" and by["pred"]["pin"]
