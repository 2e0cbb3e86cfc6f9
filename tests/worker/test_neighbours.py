"""kit.worker.neighbours: tiles of the upper triangle give the paper's full stable argsort exactly."""

import numpy as np
import pytest

from kit.worker.neighbours import _top_desc, nearest_neighbours


def full_sort_neighbours(E, k=10):
    """The paper's code: the whole similarity matrix, its diagonal -2, a stable argsort."""
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    S = En @ En.T
    np.fill_diagonal(S, -2)
    return np.argsort(-S, axis=1, kind="stable")[:, :k]


def exact(n, d=6, seed=0):
    """Rows of four entries +-1 (norm 2): every cosine is a multiple of 1/4, computed exactly
    in any order, so the tiles' products equal the full one whatever path the BLAS takes for
    small products. Few distinct values: ties everywhere, signed zeros among them."""
    rng = np.random.default_rng(seed)
    E = np.zeros((n, d))
    for row in E:
        row[rng.choice(d, 4, replace=False)] = rng.choice([-1.0, 1.0], 4)
    return E


@pytest.mark.parametrize("tile", [1, 7, 16, 45, 90, 1024])
def test_tiles_equal_the_full_stable_sort(tile):
    E = exact(90)
    E[11] = 2 * E[3]  # scaled rows tie too
    got = nearest_neighbours(E, 10, tile=tile)
    assert np.array_equal(got, full_sort_neighbours(E))
    assert np.array_equal(
        nearest_neighbours(E.astype(np.float32), 10, tile=tile),
        full_sort_neighbours(E.astype(np.float32)),
    )


@pytest.mark.parametrize("tile", [4, 25, 1024])
def test_zero_rows_give_nan_as_the_full_sort_does(tile):
    E = exact(60, seed=1)
    E[[5, 33]] = 0.0  # 0/0: whole rows and columns of NaN, sorted last by argsort
    with np.errstate(invalid="ignore"):
        got, want = nearest_neighbours(E, 10, tile=tile), full_sort_neighbours(E)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("n, k", [(12, 10), (11, 10), (5, 10)])
def test_fewer_rows_than_neighbours(n, k):
    E = exact(n, seed=n)
    assert np.array_equal(nearest_neighbours(E, k, tile=4), full_sort_neighbours(E, k))


def test_a_real_sized_embedding_bit_for_bit():
    """64 components, tiles of the size kit uses, duplicated rows (exact ties in the paper's
    matrix): the same neighbours as the full product, ties included, in float64 and float32."""
    rng = np.random.default_rng(3)
    E = rng.normal(size=(2300, 64)) * rng.uniform(0.1, 10, size=(2300, 1))
    E[1500:1520] = E[7]
    E[2000] = 3 * E[1200]
    for X in (E, E.astype(np.float32)):
        got = nearest_neighbours(X, 10, tile=1024)
        assert np.array_equal(got, full_sort_neighbours(X))
    assert got[7].tolist() == list(range(1500, 1510))


@pytest.mark.parametrize("n, k, levels", [(37, 10, 3), (100, 10, 1000), (11, 10, 2), (250, 7, 5)])
def test_threshold_selection_equals_the_full_stable_sort_with_ties(n, k, levels):
    """Few distinct values (many ties at the threshold), n not a multiple of k, all-equal rows."""
    rng = np.random.default_rng(n)
    S = rng.integers(0, levels, size=(40, n)).astype(np.float64) / levels
    S[0] = 0.5  # every element tied
    S[1, ::3] = -0.0  # signed zeros tie with zeros
    S[2, 5] = np.nan  # NaN rows take the full sort
    want = np.argsort(-S, axis=1, kind="stable")[:, :k]
    assert np.array_equal(_top_desc(S, k), want)
    key = np.array([[3.0, np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan, 0.0]])
    assert _top_desc(-key, 2).tolist() == np.argsort(key, axis=1, kind="stable")[:, :2].tolist()


def test_tiles_give_the_same_neighbours_on_one_and_two_blas_threads():
    """The threads factor's runs: the tiles' products on 1 and 2 BLAS threads agree."""
    from threadpoolctl import threadpool_limits

    E = np.random.default_rng(5).normal(size=(2100, 64))
    E[300:305] = E[9]
    with threadpool_limits(1, user_api="blas"):
        one = nearest_neighbours(E, 10)
    with threadpool_limits(2, user_api="blas"):
        two = nearest_neighbours(E, 10)
    assert np.array_equal(one, two) and np.array_equal(one, full_sort_neighbours(E))
