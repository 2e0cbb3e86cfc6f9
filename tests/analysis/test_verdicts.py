"""kit.analysis.verdicts: the vectorised paired bootstrap against a plain independent computation."""

import numpy as np
import pytest
from places import PIPELINES
from sklearn.metrics import roc_auc_score
from stored import budget_store

from kit.analysis.auc import auc, case_major_auc
from kit.analysis.verdicts import (
    KEYS,
    PAIRS,
    bootstrap,
    changed,
    describe,
    resample_weights,
    run_verdicts,
    stability,
    stability_report,
    verdict_sets,
)


def probs_and_labels(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    base = y * 0.35 + rng.random(n) * 0.6
    return {
        "lr": np.round(base, 2),  # ties
        "mlp": np.clip(base + rng.normal(0, 0.05, n), 0, 1),
        "hgb": np.clip(y * 0.7 + rng.random(n) * 0.3, 0, 1),  # clearly better
        "rf": np.round(base, 2),
    }, y


def test_weighted_auc_equals_sklearn_on_explicit_resamples():
    p, y = probs_and_labels()
    idx = np.random.default_rng(3).integers(0, len(y), size=(40, len(y)))
    expected = [roc_auc_score(y[i], p["lr"][i]) for i in idx]
    Wc = np.ascontiguousarray(resample_weights(len(y), 40, 3).T, dtype=np.float64)
    assert np.allclose(case_major_auc(p["lr"], y, Wc), expected, rtol=0, atol=1e-12)
    for m in ("lr", "mlp"):  # unweighted, ties (lr) and none (mlp)
        assert auc(p[m], y) == pytest.approx(roc_auc_score(y, p[m]), rel=0, abs=1e-15)
    assert np.isnan(auc(p["lr"], np.zeros(len(y), int)))  # one class: no AUC


@pytest.mark.parametrize("n", [7, 199, 660])
def test_the_auc_over_whole_counts_is_the_floats_bit_for_bit(n):
    """The protein bootstrap's AUC sums its resample counts as int32 (half the bytes to gather
    of float64): every sum is a whole number either way, so every bit is the same, ties and
    one-class resamples (NaN) included."""
    from kit.analysis.verdicts import RESAMPLES, SEED, _by_case, _counts_by_case

    rng = np.random.default_rng(n)
    y = (rng.random(n) < 0.3).astype(np.int64)
    counts, floats = _counts_by_case(n, RESAMPLES, SEED), _by_case(n, RESAMPLES, SEED)
    assert counts.dtype == np.int32 and np.array_equal(counts, floats)
    for scores in (rng.random(n), np.round(rng.random(n), 1)):
        got, want = case_major_auc(scores, y, counts), case_major_auc(scores, y, floats)
        assert got.dtype == want.dtype == np.float64
        assert np.array_equal(got, want, equal_nan=True)


def test_bootstrap_equals_a_plain_loop_over_the_same_indices():
    p, y = probs_and_labels()
    v = bootstrap(p, y, resamples=200, seed=12345)
    assert_intervals_of_loop(
        v, p, y, np.random.default_rng(12345).integers(0, len(y), size=(200, len(y)))
    )


def assert_intervals_of_loop(v, p, y, idx):
    """Every verdict's interval equals a plain loop's over the resamples ``idx`` (index lists)."""
    for b, a in PAIRS:
        acc = [np.mean((p[b][i] > 0.5) == y[i]) - np.mean((p[a][i] > 0.5) == y[i]) for i in idx]
        auc = [roc_auc_score(y[i], p[b][i]) - roc_auc_score(y[i], p[a][i]) for i in idx]
        for metric, d in (("acc", acc), ("auc", auc)):
            lo, hi = np.percentile(d, [2.5, 97.5])
            got = v[f"{b}-{a} {metric}"]
            assert got["lo"] == pytest.approx(lo, abs=1e-12) and got["hi"] == pytest.approx(
                hi, abs=1e-12
            )


def test_verdicts_say_which_way():
    p, y = probs_and_labels()
    v = bootstrap(p, y)
    assert set(KEYS) <= set(v) and len(KEYS) == 12
    assert v["hgb-lr auc"]["verdict"] == ">" and v["rf-hgb auc"]["verdict"] == "<"
    assert v["rf-lr acc"] == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "verdict": "="}  # identical models
    w = dict(v, **{"rf-lr acc": dict(v["rf-lr acc"], verdict=">")})
    assert changed(v, w) == ["rf-lr acc"]
    assert describe("hgb-mlp acc") == "hgb minus mlp, accuracy"


def test_run_verdicts_are_computed_once_and_stored(tmp_path):
    st = budget_store(tmp_path)
    run = st.runs()[0].id
    assert st.verdicts(run, 1) is None
    v = run_verdicts(st, run)
    assert st.verdicts(run, 1) == v
    rows = stability(st, [r.id for r in st.runs()])
    assert len(rows) == 12 and all(sum(r.counts.values()) == r.runs for r in rows)


def test_a_factors_stability_compares_only_what_the_factor_changes(tmp_path):
    """The Linux `arch` factor pairs code paths within two different stacks. Each pair agrees
    on every verdict, but the two stacks disagree with each other: pooled, the verdicts looked
    unstable; per group (a reference run and its partners) they are stable, as the budget says."""
    from stored import arrays, put, spec

    from kit.analysis.verdicts import stability_report
    from kit.runs.planning.options import Pair
    from kit.runs.store import Store

    st = Store(tmp_path / "h")
    one, two = arrays(0), arrays(0)
    two["hgb"] = 1 - two["hgb"]  # the other stack's boosting is much worse: other verdicts
    specs = {
        k: spec(stack=s, env=env)
        for k, s, env in (
            ("a1", "np2", (("OPENBLAS_CORETYPE", "Haswell"),)),
            ("a2", "np2", (("OPENBLAS_CORETYPE", "Prescott"),)),
            ("b1", "mkl", (("MKL_CBWR", "AVX2"),)),
            ("b2", "mkl", (("MKL_CBWR", "SSE4_2"),)),
        )
    }
    for k, s in specs.items():
        put(st, tmp_path, s, one if k[0] == "a" else two)
    st.add_pairs(
        [
            Pair("arch", "", specs["a1"], specs["a2"], "np2"),
            Pair("arch", "", specs["b1"], specs["b2"], "mkl"),
        ]
    )
    rows = stability_report(st, "d" * 64, "arch")["arch"]
    assert all(r.stable and r.groups == 2 and r.groups_changed == 0 for r in rows)
    # the two stacks do disagree: pooled, these verdicts would have read as unstable
    assert any(sum(1 for c in r.counts.values() if c) > 1 for r in rows)


def test_k_classes_bootstrap_equals_a_plain_loop_with_sklearns_balanced_accuracy():
    from sklearn.metrics import balanced_accuracy_score

    from kit.analysis.verdicts import class_bootstrap

    rng = np.random.default_rng(3)
    y = rng.integers(0, 5, 150)
    preds = {
        m: np.where(rng.random(150) < q, y, rng.integers(0, 5, 150))
        for m, q in (("a", 0.6), ("b", 0.8))
    }
    v = class_bootstrap(preds, y, ("a", "b"), resamples=200, seed=12345)
    assert set(v) == {"b-a acc", "b-a bacc", "_scores"}
    assert v["_scores"]["b"]["bacc"] == pytest.approx(
        balanced_accuracy_score(y, preds["b"]), abs=1e-12
    )
    idx = np.random.default_rng(12345).integers(0, len(y), size=(200, len(y)))
    for metric, score in (("acc", lambda t, p: np.mean(t == p)), ("bacc", balanced_accuracy_score)):
        d = [score(y[i], preds["b"][i]) - score(y[i], preds["a"][i]) for i in idx]
        lo, hi = np.percentile(d, [2.5, 97.5])
        got = v[f"b-a {metric}"]
        assert got["lo"] == pytest.approx(lo, abs=1e-12) and got["hi"] == pytest.approx(
            hi, abs=1e-12
        )
        assert got["verdict"] == ">"  # 0.8 against 0.6 of the rows right: b is better


@pytest.mark.slow
def test_a_ten_class_truth_gets_verdicts_and_a_regression_truth_one_line(kit_home, capsys):

    from kit.cli import main

    here = PIPELINES
    ten, reg = here / "ten_classes.py", here / "regression.py"
    assert (
        main(
            [
                "run",
                "--pipeline",
                str(ten),
                "--factor",
                "seed:forest",
                "--seeds",
                "0,1",
                "--threads",
                "1",
                "--yes",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["verdicts", "--pipeline", str(ten)]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "UNFIT" not in out and "no pairs with verdicts yet" not in out
    assert "p_rf-p_lr acc" in flat and "p_rf-p_lr bacc" in flat and "seed:forest" in flat
    assert (
        main(
            [
                "run",
                "--pipeline",
                str(reg),
                "--factor",
                "seed:noise",
                "--seeds",
                "0,1,2",
                "--threads",
                "1",
                "--yes",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["verdicts", "--pipeline", str(reg)]) == 0
    out = capsys.readouterr().out
    unfit = [line for line in out.splitlines() if line.startswith("UNFIT")]
    assert len(unfit) == 1, out  # one line for the one cause its three runs share
    assert "3 runs (" in " ".join(out.split()) and "regression target" in " ".join(out.split())


# the seed run set is said once (issue 26, item 8)
def test_the_seed_set_is_listed_once_and_found_by_either_name(tmp_path):
    st = budget_store(tmp_path)
    sets = verdict_sets(st, "d" * 64)
    assert "seeds" in sets and "seed" not in sets
    assert list(stability_report(st, "d" * 64, "seed")) == ["seeds"]
