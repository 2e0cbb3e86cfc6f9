"""kit.budget: rows per factor, seed units from the seed pairs, confounds kept."""

import numpy as np
import pytest

from kit.budget import budget, confounds, pair_details
from kit.plan import Pair
from kit.spec import seeds
from kit.store import Store
from stored import arrays, env, put, spec


def flipped(a, model, k):
    b = dict(a)
    b[model] = a[model].copy()
    b[model][:k] = np.where(a[model][:k] > 0.5, 0.1, 0.9)
    return b


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path / "home")
    base = arrays(0)
    s0 = spec()
    put(st, tmp_path, s0, base)
    pairs = []
    # seed pairs: the hgb flips 4 and 6 -> median 5 = one seed unit; embedding differs
    for s, k in ((1, 4), (2, 6)):
        b = flipped(dict(base, svd_rand=arrays(s)["svd_rand"]), "hgb", k)
        sb = spec(seeds=seeds(s))
        put(st, tmp_path, sb, b)
        pairs.append(Pair("seed", "", s0, sb, f"seed 0 vs {s}"))
    # a threads pair: hgb flips 2, and the BLAS kernel also changed (a confound)
    st2 = spec(threads=2)
    e2 = env(env={"OMP_NUM_THREADS": "2"})
    e2["threadpools"] = [dict(e2["threadpools"][0], num_threads=2, architecture="Prescott")]
    put(st, tmp_path, st2, flipped(base, "hgb", 2), e2)
    pairs.append(Pair("threads", "", s0, st2, "1 vs 2 threads"))
    sr = spec(replicate=1)
    put(st, tmp_path, sr, base)
    pairs.append(Pair("repeat", "", s0, sr, "run twice"))
    st.add_pairs(pairs)
    return st


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
