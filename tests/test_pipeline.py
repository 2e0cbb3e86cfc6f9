"""kit.worker.pipeline: every stage bit for bit equal to the paper's appendix code."""

import hashlib
import warnings

import numpy as np
import pytest

from kit.worker import pipeline as P
from paper_reference import kmer_matrix, reference_run


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() + a.dtype.str + str(a.shape)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_stage_matches_the_paper_code(tiny, dtype):
    seqs = list(tiny.seqs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = reference_run(seqs, tiny.labels, tiny.n_train, seed=7, dtype=np.dtype(dtype))
    mine, timings = P.run_pipeline(seqs, tiny.labels, tiny.n_train, dtype=dtype,
                                   seeds=dict.fromkeys(P.SEED_NAMES, 7))
    for stage, a in ref.items():
        assert digest(mine[stage]) == digest(a), stage
    assert set(timings) >= {"kmer", "tfidf", "svd_rand", "knn", "lr", "rf"}
    assert mine["y_test"].tolist() == list(tiny.labels[tiny.n_train:])


def test_kmer_counts_are_exact_integers():
    C = P.kmer_counts(["AAAAC", "ACDACD"])
    assert C.shape == (2, 8000)
    # AAAAC: AAA twice, AAC once; ACDACD: ACD twice, CDA once, DAC once
    assert C[0, 0] == 2 and C[0, 1] == 1 and C.getrow(0).sum() == 3
    assert C.getrow(1).sum() == 4 and C[1, 0 * 400 + 1 * 20 + 2] == 2
    ref = kmer_matrix(["AAAAC", "ACDACD"])
    for part in ("data", "indices", "indptr"):
        assert digest(getattr(C, part)) == digest(getattr(ref, part))


@pytest.mark.parametrize("seq", ["ACDXA", "AC"])
def test_kmer_counts_refuses_bad_sequences(seq):
    with pytest.raises(ValueError):
        P.kmer_counts(["ACDEFG", seq])


def full_sort_neighbours(E, k=10):
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    S = En @ En.T
    np.fill_diagonal(S, -2)
    return np.argsort(-S, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("block_rows", [1, 7, 64, None])
def test_blocked_neighbours_equal_the_full_stable_sort(block_rows):
    rng = np.random.default_rng(0)
    E = rng.normal(size=(90, 5))
    # exact ties: duplicated and scaled rows have identical cosine similarities
    E[10] = E[3]
    E[11] = 2 * E[3]
    E[40:50] = E[20]
    got = P.nearest_neighbours(E, block_rows=block_rows)
    assert np.array_equal(got, full_sort_neighbours(E))
    assert got[3].tolist()[:2] == [10, 11]  # ties go to the lower index


def test_stable_top_handles_nan_rows():
    key = np.array([[3.0, np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan, 0.0]])
    assert P._stable_top(key, 2).tolist() == np.argsort(key, axis=1, kind="stable")[:, :2].tolist()


def test_the_arpack_embedding_feeds_every_later_stage(tiny):
    """svd-solver's runs: both SVDs as always, then k-means, neighbours, models on ARPACK's."""
    seqs, s = list(tiny.seqs), dict.fromkeys(P.SEED_NAMES, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rand, _ = P.run_pipeline(seqs, tiny.labels, tiny.n_train, seeds=s)
        arp, _ = P.run_pipeline(seqs, tiny.labels, tiny.n_train, seeds=s, embedding="arpack")
        Ea = arp["svd_arpack"]
        assert digest(Ea) == digest(rand["svd_arpack"]) and digest(arp["svd_rand"]) == digest(rand["svd_rand"])
        assert digest(arp["knn"]) == digest(P.nearest_neighbours(Ea))
        assert digest(arp["kmeans"]) == digest(P.kmeans(Ea, 3)[0])
        y = np.asarray(tiny.labels)
        lr = P.classifiers(s)["lr"].fit(Ea[:tiny.n_train], y[:tiny.n_train])
        assert digest(arp["lr"]) == digest(lr.predict_proba(Ea[tiny.n_train:])[:, 1])
    assert digest(arp["knn"]) != digest(rand["knn"])
    with pytest.raises(ValueError, match="unknown embedding"):
        P.run_pipeline(seqs[:70], tiny.labels[:70], 50, embedding="exact")


@pytest.mark.parametrize("n, k, levels", [(37, 10, 3), (100, 10, 1000), (11, 10, 2), (250, 7, 5)])
def test_threshold_selection_equals_the_full_stable_sort_with_ties(n, k, levels):
    """Few distinct values (many ties at the threshold), n not a multiple of k, all-equal rows."""
    rng = np.random.default_rng(n)
    S = rng.integers(0, levels, size=(40, n)).astype(np.float64) / levels
    S[0] = 0.5          # every element tied
    S[1, ::3] = -0.0    # signed zeros tie with zeros
    S[2, 5] = np.nan    # NaN rows take the full sort
    want = np.argsort(-S, axis=1, kind="stable")[:, :k]
    assert np.array_equal(P._top_desc(S, k), want)
