"""kit.analysis.leakage and kit.analysis.homology: the leakage split by hand, and the summary
over a real store's runs."""

import json

import numpy as np
import pytest
from stored import arrays, put, spec

from kit.analysis.cluster_bootstrap import run_cluster_verdicts
from kit.analysis.homology import homology_summary
from kit.analysis.leakage import leakage, run_leakage
from kit.analysis.verdicts import KEYS
from kit.core.errors import KitError
from tests.analysis.test_cluster_bootstrap import noisy_store

Y = np.array([1, 0, 1, 0, 1, 1, 0, 0])
SIDE = np.array([True] * 4 + [False] * 4)
LR = np.array([0.9, 0.1, 0.8, 0.2, 0.4, 0.6, 0.7, 0.3])
PROBS = {"lr": LR, "mlp": np.full(8, 0.5), "hgb": LR, "rf": 1 - LR}


def test_the_split_is_hand_computed_accuracy_and_auc():
    got = leakage(PROBS, Y, SIDE)
    lr = got["lr"]
    assert (lr.n_with, lr.n_without) == (4, 4)
    # with a homolog: 0.9 0.1 0.8 0.2 against 1 0 1 0, all right, every positive above
    assert lr.acc_with == 1.0 and lr.auc_with == 1.0
    # without: predictions 0 1 1 0 against 1 1 0 0 (two right); positives 0.4 and 0.6 each
    # beat only the negative 0.3 of the two (0.7, 0.3): 2 of 4 pairs
    assert lr.acc_without == 0.5 and lr.auc_without == 0.5
    # 0.5 is not above 0.5: mlp calls every protein negative; all tied, AUC one half
    assert got["mlp"].acc_with == 0.5 and got["mlp"].auc_without == 0.5
    assert got["rf"].acc_with == 0.0 and got["rf"].auc_with == 0.0
    assert got["rf"].acc_without == 0.5 and got["rf"].auc_without == 0.5


def test_a_side_that_cannot_say_says_none():
    one_class = leakage(PROBS, Y, Y == 1)["lr"]  # the homolog side holds only positives
    assert one_class.auc_with is None and one_class.auc_without is None
    # positives 0.9 0.8 0.4 0.6 (one wrong), negatives 0.1 0.2 0.7 0.3 (one wrong)
    assert one_class.acc_with == 0.75 and one_class.acc_without == 0.75
    empty = leakage(PROBS, Y, np.zeros(8, bool))["lr"]
    assert empty.n_with == 0 and empty.acc_with is None and empty.auc_with is None
    assert empty.acc_without == 0.75
    with pytest.raises(KitError, match="one bool per test protein"):
        leakage(PROBS, Y, SIDE[:7])
    with pytest.raises(KitError, match="one bool per test protein"):
        leakage(PROBS, Y, SIDE.astype(int))


def test_the_summary_is_medians_over_the_datasets_runs_with_verdicts(tmp_path):
    from kit.core.spec import torch_seeds

    st = noisy_store(tmp_path, runs=3)
    first = st.runs()[0].id
    ds = st.runs()[0].spec.dataset
    # a torch run has no verdicts; a run on 30 test proteins is another split: both left out
    t = spec(stack="torch-linux-cpu", kind="torch", input=first, seeds=torch_seeds(0))
    put(st, tmp_path, t, {"torch_mlp": np.full(20, 0.3), "y_test": np.zeros(20, np.int64)})
    other = put(st, tmp_path, spec(threads=2), arrays(9, n_test=30))
    clusters = np.repeat(np.arange(10), 2)
    side = np.arange(20) % 3 == 0
    s = homology_summary(st, ds, clusters, side, min_clusters=10)
    runs = [r.id for r in st.runs(ds) if r.spec.kind == "pipeline" and r.id != other]
    assert s.runs == 3 and len(runs) == 3
    assert s.left_out == [f"{other[:12]}: 30 test proteins, the clustering 20"]
    assert (s.n_with_homolog, s.n_without_homolog) == (7, 13)
    leak = [run_leakage(st, r, side)["hgb"] for r in runs]
    hgb = s.models["hgb"]
    assert hgb.acc_with_homolog == np.median([x.acc_with for x in leak])
    assert hgb.acc_without_homolog_range == [
        min(x.acc_without for x in leak),
        max(x.acc_without for x in leak),
    ]
    per_run = [run_cluster_verdicts(st, r, clusters) for r in runs]
    assert [v.verdict for v in s.verdicts] == list(KEYS)
    for i, v in enumerate(s.verdicts):
        rows = [p[i] for p in per_run]
        assert v.runs == 3 and v.changed == sum(r.changed for r in rows)
        ratios = [r.width_ratio for r in rows if r.width_ratio is not None]
        assert v.width_ratio == (np.median(ratios) if ratios else None)
        assert v.cluster["lo"] == np.median([r.cluster_lo for r in rows])
    assert s.rest_on_homologs == sum(v.lost > 0 for v in s.verdicts)
    for v in s.verdicts:  # lost: significant under proteins, not under clusters
        rows = [p[KEYS.index(v.verdict)] for p in per_run]
        assert v.lost == sum(r.protein_verdict != "=" and r.cluster_verdict == "=" for r in rows)
    all_ratios = [r.width_ratio for p in per_run for r in p if r.width_ratio is not None]
    assert s.too_narrow == np.median(all_ratios)
    out = json.loads(json.dumps(s.to_json()))  # the JSON edge: plain, with the names
    assert {"acc_with_homolog", "acc_without_homolog"} <= set(out["models"]["lr"])
    assert {"verdict", "width_ratio", "changed"} <= set(out["verdicts"][0])
    assert out["runs"] == 3 and out["dataset"] == ds


def test_a_dataset_without_runs_summarises_to_nothing(tmp_path):
    st = noisy_store(tmp_path, runs=1)
    s = homology_summary(st, "e" * 64, np.arange(20), np.zeros(20, bool))
    assert s.runs == 0 and s.too_narrow is None and s.rest_on_homologs == 0
    assert all(v.width_ratio is None and v.runs == 0 for v in s.verdicts)


def test_a_resplit_run_reads_its_own_test_clusters():
    """A seed:split run's test proteins are another set: its clusters and train homologs come
    from the whole clustering at its own test positions, not from the dataset's cut."""
    from kit.analysis.homology import _resplit

    labels = np.array([0, 0, 1, 2, 2, 3])
    clusters, homolog = _resplit(labels, np.array([1, 3, 5]))
    assert clusters.tolist() == [0, 2, 3]
    assert homolog.tolist() == [True, True, False]  # train holds 0, 1, 2 (positions 0, 2, 4)


@pytest.mark.parametrize("test", [[1, 1, 5], [1, 3, 6], [-1, 3, 5], [[1, 3, 5]], [0.5, 1, 2], []])
def test_resplit_positions_that_are_not_a_test_set_are_refused(test):
    """Positions come from a stored (maybe imported) array: never trusted to index."""
    from kit.analysis.homology import _resplit

    assert _resplit(np.array([0, 0, 1, 2, 2, 3]), np.array(test)) is None


def test_a_run_with_too_few_test_clusters_is_left_out(tmp_path):
    """One or two test clusters: each resample weighs nearly every protein alike, so the
    'cluster' interval shrinks to the point estimate and turns "=" into significant. Such a
    run is left out, saying why, rather than reported as resting on homologs."""
    st = noisy_store(tmp_path, runs=1)
    ds = st.runs()[0].spec.dataset
    s = homology_summary(st, ds, np.zeros(20, np.int64), np.ones(20, bool))
    assert s.runs == 0 and s.rest_on_homologs == 0 and s.too_narrow is None
    assert s.left_out == [
        f"{st.runs()[0].id[:12]}: 1 test clusters, fewer than 20: a cluster bootstrap needs more"
    ]


def test_a_resplit_run_whose_positions_its_seed_did_not_make_is_left_out(tmp_path):
    """A bundle's seed:split run with forged test positions (distinct and in range, so they
    would index): the positions are recomputed from its split seed and must match."""
    from kit.analysis.homology import _own_split

    st = noisy_store(tmp_path, runs=0)
    n, n_train = 60, 40
    want = np.random.default_rng(2).permutation(n)[n_train:]
    good = put(st, tmp_path, spec(split=2), dict(arrays(0), **{"split.test": want}))
    bad = put(
        st, tmp_path, spec(split=2, threads=2), dict(arrays(1), **{"split.test": np.arange(40, 60)})
    )
    labels = np.arange(n) // 2
    got = _own_split(st, good, st.specs()[good], labels, n_train)
    assert got[0].tolist() == labels[want].tolist()
    assert _own_split(st, bad, st.specs()[bad], labels, n_train) is None


def test_a_run_without_test_labels_is_left_out_not_a_crash(tmp_path):
    """A bundle's pipeline run without y_test passed the bundle checks; `kit homology` then
    ended in KeyError: such a run is named and left out."""
    st = noisy_store(tmp_path, runs=1)
    ds = st.runs()[0].spec.dataset
    a = arrays(5)
    del a["y_test"]
    lone = put(st, tmp_path, spec(threads=3), a)
    s = homology_summary(st, ds, np.arange(20), np.zeros(20, bool))
    assert f"{lone[:12]}: it holds no test labels (y_test)" in s.left_out and s.runs == 1
