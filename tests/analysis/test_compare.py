"""kit.analysis.compare: each measure on inputs whose answer is known."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, roc_auc_score
from stored import arrays, env, put, spec

from kit.analysis.compare import (
    VERSION,
    adjusted_rand,
    compare_runs,
    embedding_diff,
    env_diff,
    model_diff,
    neighbour_jaccard,
    sv_rel,
)
from kit.analysis.records import EmbeddingDiff
from kit.runs.store import Store


def test_sign_flips_are_aligned_away_and_counted():
    E = np.random.default_rng(0).normal(size=(50, 6))
    F = E.copy()
    F[:, [1, 4]] *= -1
    d = embedding_diff(E, F)
    assert d == {"rel_fro": 0.0, "sign_flips": 2, "components": [0.0] * 6}
    G = F.copy()
    G[0, 0] += 1e-9
    d = embedding_diff(E, G)
    assert d["sign_flips"] == 2 and 0 < d["rel_fro"] < 1e-9
    # only the first component moved, by 1e-9 over its own norm
    assert d["components"][0] == pytest.approx(1e-9 / np.linalg.norm(E[:, 0]))
    assert d["components"][1:] == [0.0] * 5


def test_singular_values():
    assert sv_rel(np.array([2.0, 1.0]), np.array([2.0, 1.1])) == pytest.approx([0.0, 0.1])


def test_neighbour_jaccard():
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    b = np.array([[4, 3, 2, 1], [5, 6, 9, 10]])
    assert neighbour_jaccard(a, b) == pytest.approx((1 + 2 / 6) / 2)


def test_model_diff_counts_flips_and_scores():
    y = np.array([0, 1, 1, 0, 1, 0])
    pa = np.array([0.1, 0.9, 0.6, 0.4, 0.7, 0.2])
    pb = np.array([0.1, 0.9, 0.4, 0.6, 0.7, 0.2])
    d = model_diff(pa, pb, y)
    assert d.flips == 2 and d.max_dp == pytest.approx(0.2)
    assert d.acc_a == 1.0 and d.acc_b == pytest.approx(4 / 6)
    assert d.d_auc == pytest.approx(roc_auc_score(y, pb) - roc_auc_score(y, pa))
    one = model_diff(pa, pb, np.ones(6, int))  # one class in the test set: no AUC, said as NaN
    assert np.isnan(one.auc_a) and np.isnan(one.d_auc) and one.acc_a == 0.5


@pytest.mark.parametrize(
    "case",
    ["random", "relabelled", "one-cluster", "singletons", "empty", "discordant", "negative-labels"],
)
def test_adjusted_rand_is_scikit_learns_to_the_bit(case):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 10, 500)
    b = {
        "random": rng.integers(0, 10, 500),
        "relabelled": (a * 7 + 3) % 10,
        "one-cluster": np.zeros(500, int),
        "singletons": np.arange(500),
        "empty": np.array([], int),
        "discordant": np.tile([0, 1], 250),
        "negative-labels": np.where(rng.random(500) < 0.9, a, -a - 1),
    }[case]
    if case in ("empty", "discordant"):
        a = {"empty": np.array([], int), "discordant": np.repeat([0, 1], 250)}[case]
    assert adjusted_rand(a, b) == adjusted_rand_score(a, b)
    assert adjusted_rand(b, a) == adjusted_rand_score(b, a)


def test_env_diff_names_what_differs():
    a = env()
    b = env(python="3.13.0", threadpools=[dict(a["threadpools"][0], architecture="Prescott")])
    assert env_diff({"env": a}, {"env": b}) == {
        "python": ["3.12.1", "3.13.0"],
        "blas@numpy:architecture": ["Haswell", "Prescott"],
    }


def test_compare_runs_on_stored_runs(tmp_path):
    store = Store(tmp_path / "home")
    a = arrays(0)
    b = dict(a)
    b["svd_rand"] = a["svd_rand"] * np.array([1, -1, 1, 1, 1, 1, 1, -1])
    b["rf"] = a["rf"].copy()
    b["rf"][:3] = 1 - a["rf"][:3]
    ra, rb = put(store, tmp_path, spec(), a), put(store, tmp_path, spec(replicate=1), b)
    c = compare_runs(store, ra, rb)
    assert c.identical["kmer"] and c.identical["knn"] and not c.identical["svd_rand"]
    assert not c.identical["rf"] and c.identical["hgb"]
    assert c.svd_rand == EmbeddingDiff(
        rel_fro=0.0, sign_flips=2, sv_rel_max=0.0, components=[0.0] * 8, values=[0.0] * 8
    )
    # identical numbers keep every bit; after sign alignment the embedding is identical too
    assert c.digits["svd_rand"]["bits"] == 52 and c.digits["hgb"]["bits_min"] == 52
    assert c.digits["rf"]["bits_min"] < 52
    assert c.kmeans_ari == 1.0 and c.knn_jaccard == 1.0
    expected = int(np.sum((a["rf"][:3] > 0.5) != (b["rf"][:3] > 0.5)))
    assert c.models["rf"].flips == expected and c.models["lr"].flips == 0
    assert c.n_test == 20 and c.env_diff == {}
    assert store.comparison(ra, rb, VERSION) == c.to_json()  # cached
    assert compare_runs(store, ra, rb) == c  # read back from the cache
