"""kit.analysis.cluster_bootstrap: clusters drawn whole, paired, and singletons are the protein bootstrap."""

import numpy as np
import pytest
from stored import arrays, put, spec

from kit.analysis.cluster_bootstrap import (
    cluster_bootstrap,
    cluster_weights,
    compare,
    digest,
    ranks,
    run_cluster_bootstrap,
    run_cluster_verdicts,
)
from kit.analysis.verdicts import KEYS, SEED, bootstrap, run_verdicts
from kit.core.errors import KitError
from tests.analysis.test_verdicts import assert_intervals_of_loop, probs_and_labels


def noisy_store(tmp_path, runs=1):
    """A real store holding ``runs`` pipeline runs of 20 test proteins on which the models err."""
    from kit.core.spec import seeds
    from kit.runs.store import Store

    st = Store(tmp_path / "home")
    for s in range(runs):
        a = arrays(s)
        p, y = probs_and_labels(n=20, seed=s)
        a.update(p, y_test=y.astype(np.int64))
        put(st, tmp_path, spec(seeds=seeds(s)), a)
    return st


CLUSTERS = np.array([7, 7, 3, 9, 9, 9, 3, 4, 7, 1])  # 5 clusters, members not adjacent


def test_ranks_number_clusters_by_first_appearance():
    assert ranks(CLUSTERS).tolist() == [0, 0, 1, 2, 2, 2, 1, 3, 0, 4]
    assert digest(CLUSTERS) == digest(CLUSTERS * 10 + 1)  # the same partition, other labels
    assert digest(CLUSTERS) != digest(np.arange(10))


def test_members_of_a_drawn_cluster_move_together():
    w = cluster_weights(CLUSTERS, resamples=500, seed=SEED)
    assert w.shape == (10, 500) and w.dtype == np.float64
    r = ranks(CLUSTERS)
    for c in range(5):
        members = w[r == c]
        assert (members == members[0]).all()  # every member has its cluster's count
    # each resample draws exactly as many clusters as there are
    firsts = [int(np.flatnonzero(r == c)[0]) for c in range(5)]
    assert (w[firsts].sum(axis=0) == 5).all()
    # and the draws are the seeded cluster indices themselves
    idx = np.random.default_rng(SEED).integers(0, 5, size=(500, 5))
    expected = np.array([[np.sum(row == r[i]) for row in idx] for i in range(10)], np.float64)
    assert np.array_equal(w, expected)
    # protein totals vary by resample (a cluster of 3 drawn twice adds 6): not always n
    assert len(set(w.sum(axis=0))) > 1


def test_both_models_are_scored_on_the_same_resampled_clusters():
    """Against a plain loop: expand each resample's drawn clusters into their members, score
    both models on that one list of proteins, take the difference."""
    p, y = probs_and_labels(n=120, seed=1)
    labels = np.random.default_rng(2).integers(0, 40, 120)  # 40 clusters of about 3
    r = ranks(labels)
    k = r.max() + 1
    v = cluster_bootstrap(p, y, labels, resamples=200, seed=SEED)
    draws = np.random.default_rng(SEED).integers(0, k, size=(200, k))
    members = [np.flatnonzero(r == c) for c in range(k)]
    assert_intervals_of_loop(v, p, y, [np.concatenate([members[c] for c in row]) for row in draws])


def test_singleton_clusters_reproduce_the_protein_bootstrap_bit_for_bit():
    p, y = probs_and_labels()
    labels = np.arange(len(y))[::-1] * 3  # singletons, labelled in another order
    assert cluster_bootstrap(p, y, labels) == bootstrap(p, y)
    rows = compare(bootstrap(p, y), cluster_bootstrap(p, y, labels))
    assert not any(r.changed for r in rows)
    assert all(r.width_ratio == 1.0 for r in rows if r.width_ratio is not None)


def test_a_correlated_giant_cluster_widens_the_interval_and_can_change_the_verdict():
    """100 near-copies on which hgb is right and mlp wrong, 200 singletons on which they tie
    at random: proteins resampled one by one see 100 independent wins; clusters see one."""
    rng = np.random.default_rng(4)
    n = 300
    y = (rng.random(n) < 0.5).astype(int)
    good = np.where(y == 1, 0.8, 0.2)
    noisy = np.clip(good + rng.normal(0, 0.45, n), 0, 1)
    p = {"lr": noisy, "rf": noisy, "mlp": noisy.copy(), "hgb": noisy.copy()}
    p["hgb"][:100], p["mlp"][:100] = good[:100], 1 - good[:100]
    labels = np.r_[np.zeros(100, int), np.arange(1, 201)]
    rows = {r.verdict: r for r in compare(bootstrap(p, y), cluster_bootstrap(p, y, labels))}
    acc = rows["hgb-mlp acc"]
    assert acc.width_ratio > 2 and acc.protein_verdict == ">"
    assert acc.changed and acc.cluster_verdict == "="
    assert rows["rf-lr acc"].width_ratio is None  # identical models: a point, no ratio


def test_a_clustering_of_another_split_is_refused():
    p, y = probs_and_labels(n=50)
    with pytest.raises(KitError, match="the clustering has 49 test proteins, the run 50"):
        cluster_bootstrap(p, y, np.arange(49))


def test_cluster_verdicts_are_cached_per_clustering_beside_the_protein_verdicts(tmp_path):
    st = noisy_store(tmp_path)
    run = st.runs()[0].id
    protein = run_verdicts(st, run)
    row = st.db.execute("SELECT version, result FROM verdicts WHERE run=?", (run,)).fetchall()
    assert row[0][0] == 1 and len(row) == 1
    one = np.repeat(np.arange(5), 4)  # 5 clusters of 4 consecutive proteins
    two = np.arange(20) % 4  # 4 clusters of 5 interleaved ones
    v1, v2 = run_cluster_bootstrap(st, run, one), run_cluster_bootstrap(st, run, two)
    assert v1 != v2
    assert st.verdicts(run, 1, clustering=digest(one)) == v1
    assert st.verdicts(run, 1, clustering=digest(two)) == v2
    assert st.verdicts(run, 1, clustering=digest(one + 100)) == v1  # the same partition
    # the protein bootstrap's row is the one it was, and reads back as before
    rows = dict(
        st.db.execute("SELECT version, result FROM verdicts WHERE run=?", (run,)).fetchall()
    )
    assert len(rows) == 3 and rows[1] == row[0][1] and st.verdicts(run, 1) == protein
    assert set(rows) == {1, f"1:cluster:{digest(one)}", f"1:cluster:{digest(two)}"}
    # a cached row edited by hand is noticed and recomputed, as the protein rows are
    key = f"1:cluster:{digest(one)}"
    assert v1["hgb-mlp acc"]["verdict"] == ">"
    st.db.execute(
        """UPDATE verdicts SET result=replace(result, '"verdict": ">"', '"verdict": "<"')
                     WHERE run=? AND version=?""",
        (run, key),
    )
    assert st.verdicts(run, 1, clustering=digest(one)) is None
    assert run_cluster_bootstrap(st, run, one) == v1
    got = run_cluster_verdicts(st, run, one)
    assert [g.verdict for g in got] == list(KEYS)
    assert all(
        (g.protein_lo, g.protein_hi) == (protein[g.verdict]["lo"], protein[g.verdict]["hi"])
        and (g.cluster_lo, g.cluster_hi) == (v1[g.verdict]["lo"], v1[g.verdict]["hi"])
        for g in got
    )


def test_without_a_clustering_verdicts_are_what_they_were(tmp_path):
    """The protein bootstrap's path: the same dict, the same stored row, the same key."""
    st = noisy_store(tmp_path)
    run = st.runs()[0].id
    v = run_verdicts(st, run)
    from kit.worker.pipeline import MODELS

    fresh = bootstrap({m: st.array(run, m) for m in MODELS}, st.array(run, "y_test"))
    assert v == fresh and st.verdicts(run, 1) == v and st.verdicts(run, 1, clustering=None) == v
    # the row's digest is the one the cache always wrote: the kind and the bare version
    import hashlib
    import json

    from kit.runs.store.caches import _canonical

    text = st.db.execute(
        "SELECT result FROM verdicts WHERE run=? AND version=1", (run,)
    ).fetchone()[0]
    h = hashlib.sha256(b"verdicts:1")
    h.update(st._basis(run).encode())
    h.update(_canonical(json.loads(text)["result"]))
    assert json.loads(text)["digest"] == h.hexdigest()
