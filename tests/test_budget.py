"""kit.budget: rows per factor, seed units from the seed pairs, confounds kept."""

import pytest

from kit.budget import budget, confounds, pair_details
from kit.plan import Pair
from kit.store import Store
from stored import arrays, budget_store, put, spec


@pytest.fixture
def store(tmp_path):
    return budget_store(tmp_path)


def test_rows_and_seed_units(store):
    b = budget(store, "d" * 64)
    rows = {r["factor"]: r for r in b["rows"]}
    assert [r["factor"] for r in b["rows"]] == ["repeat", "threads", "seed"]
    assert b["yardstick"]["flips"]["hgb"] == 5.0 and b["yardstick"]["pairs"] == 2
    assert rows["repeat"]["all_identical"] == 1 and rows["repeat"]["emb_rel_max"] == 0
    hgb = rows["threads"]["models"]["hgb"]
    assert hgb["flips_median"] == 2 and hgb["flips_median_seed_units"] == pytest.approx(0.4)
    assert rows["threads"]["models"]["lr"]["flips_median_seed_units"] is None  # 0 seed flips
    assert rows["seed"]["models"]["hgb"]["flips_max"] == 6
    assert rows["seed"]["emb_rel_seed_units"] > 1  # largest over the median
    assert b["note"] is None


def test_thread_settings_are_explained_but_a_kernel_change_is_a_confound(store):
    rows = {r["factor"]: r for r in budget(store, "d" * 64)["rows"]}
    assert rows["threads"]["confounds"] == {"blas@numpy:architecture": ["Haswell -> Prescott"]}
    assert rows["repeat"]["confounds"] == {}
    assert confounds("repeat", {"env:OMP_NUM_THREADS": ["1", "2"]})  # not explained for repeat


def test_without_seed_pairs_the_budget_says_so(tmp_path):
    st = Store(tmp_path / "h")
    put(st, tmp_path, spec(), arrays(0))
    put(st, tmp_path, spec(replicate=1), arrays(0))
    st.add_pairs([Pair("repeat", "", spec(), spec(replicate=1), "x")])
    b = budget(st, "d" * 64)
    assert b["yardstick"] is None and "kit run --factor seed" in b["note"]
    assert b["rows"][0]["models"]["rf"]["flips_median_seed_units"] is None


def test_pair_details(store):
    rows = pair_details(store, "d" * 64, "threads")
    assert len(rows) == 1 and rows[0]["comparison"]["models"]["hgb"]["flips"] == 2
    assert "blas@numpy:architecture" in rows[0]["confounds"]
