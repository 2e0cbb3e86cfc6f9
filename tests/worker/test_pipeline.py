"""kit.worker.pipeline: every stage bit for bit equal to the paper's appendix code."""

import hashlib
import warnings

import numpy as np
import pytest
from paper_reference import kmer_matrix, reference_run

from kit.worker import pipeline as P


def digest(a):
    return (
        hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() + a.dtype.str + str(a.shape)
    )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_stage_matches_the_paper_code(tiny, dtype):
    seqs = list(tiny.seqs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = reference_run(seqs, tiny.labels, tiny.n_train, seed=7, dtype=np.dtype(dtype))
    mine, timings = P.run_pipeline(
        seqs, tiny.labels, tiny.n_train, dtype=dtype, seeds=dict.fromkeys(P.SEED_NAMES, 7)
    )
    for stage, a in ref.items():
        assert digest(mine[stage]) == digest(a), stage
    assert set(timings) >= {"kmer", "tfidf", "svd_rand", "knn", "lr", "rf"}
    assert mine["y_test"].tolist() == list(tiny.labels[tiny.n_train :])


def test_kmer_counts_are_exact_integers():
    C = P.kmer_counts(["AAAAC", "ACDACD"])
    assert C.shape == (2, 8000)
    # AAAAC: AAA twice, AAC once; ACDACD: ACD twice, CDA once, DAC once
    assert C[0, 0] == 2 and C[0, 1] == 1 and C.getrow(0).sum() == 3
    assert C.getrow(1).sum() == 4 and C[1, 0 * 400 + 1 * 20 + 2] == 2
    ref = kmer_matrix(["AAAAC", "ACDACD"])
    for part in ("data", "indices", "indptr"):
        assert digest(getattr(C, part)) == digest(getattr(ref, part))


def test_kmer_counts_with_keys_beyond_32_bits(tiny):
    """k = 7: 20**7 columns, so row x column keys need 64 bits; still the paper's matrix."""
    seqs = list(tiny.seqs)[:30]
    C, ref = P.kmer_counts(seqs, k=7), kmer_matrix(seqs, k=7)
    for part in ("data", "indices", "indptr"):
        assert digest(getattr(C, part)) == digest(getattr(ref, part))


@pytest.mark.parametrize("seq", ["ACDXA", "AC"])
def test_kmer_counts_refuses_bad_sequences(seq):
    with pytest.raises(ValueError):
        P.kmer_counts(["ACDEFG", seq])


def test_the_arpack_embedding_feeds_every_later_stage(tiny):
    """svd-solver's runs: both SVDs as always, then k-means, neighbours, models on ARPACK's."""
    seqs, s = list(tiny.seqs), dict.fromkeys(P.SEED_NAMES, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rand, _ = P.run_pipeline(seqs, tiny.labels, tiny.n_train, seeds=s)
        arp, _ = P.run_pipeline(seqs, tiny.labels, tiny.n_train, seeds=s, embedding="arpack")
        Ea = arp["svd_arpack"]
        assert digest(Ea) == digest(rand["svd_arpack"]) and digest(arp["svd_rand"]) == digest(
            rand["svd_rand"]
        )
        assert digest(arp["knn"]) == digest(P.nearest_neighbours(Ea))
        assert digest(arp["kmeans"]) == digest(P.kmeans(Ea, 3)[0])
        y = np.asarray(tiny.labels)
        lr = P.classifiers(s)["lr"].fit(Ea[: tiny.n_train], y[: tiny.n_train])
        assert digest(arp["lr"]) == digest(lr.predict_proba(Ea[tiny.n_train :])[:, 1])
    assert digest(arp["knn"]) != digest(rand["knn"])
    with pytest.raises(ValueError, match="unknown embedding"):
        P.run_pipeline(seqs[:70], tiny.labels[:70], 50, embedding="exact")


def test_the_forest_trained_on_every_held_core_is_the_papers_forest():
    """A run of t threads trains the forest's trees on t threads (n_jobs=t) and predicts on one:
    the probabilities are those of the paper's n_jobs=None forest, bit for bit, ties included."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(5)
    E = rng.standard_normal((900, 12))
    E[50:60] = E[0]  # duplicated rows: ties inside the trees
    y = (E[:, 0] + 0.7 * rng.standard_normal(900) > 0).astype(np.int64)
    seeds = dict.fromkeys(P.SEED_NAMES, 11)
    paper = RandomForestClassifier(n_estimators=200, random_state=11).fit(E[:700], y[:700])
    want = digest(paper.predict_proba(E[700:])[:, 1])
    for jobs in (1, 2, 3):
        assert P.classifiers(seeds, jobs)["rf"].n_jobs == jobs
        out, timings = {}, {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            P.classify(E, y, 700, seeds, out, P._timer(timings), jobs)
        assert digest(out["rf"]) == want, jobs
        assert set(timings) == {"lr", "mlp", "hgb", "rf"}
