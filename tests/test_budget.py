"""kit.analysis.budget: rows per factor, seed units from the seed pairs, confounds kept."""

import numpy as np
import pytest

from kit.analysis.budget import budget, confounds, pair_details
from kit.runs.planning.options import Pair
from kit.runs.store import Store
from kit.core.spec import seeds
from stored import arrays, budget_store, put, spec


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
