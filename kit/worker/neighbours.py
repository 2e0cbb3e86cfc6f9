"""Exact k nearest neighbours by cosine similarity: the paper's stable argsort, without its n x n matrix."""

from __future__ import annotations

import numpy as np

N_NEIGHBOURS = 10  # the paper's k
TILE = 1024  # least rows (and columns) of a tile: blocks are 1-2x this, 8-32 MiB of similarities
_GROUP = 128  # a tile's row is screened in this many strided groups (and a tail)


def nearest_neighbours(E, k=N_NEIGHBOURS, tile=TILE):
    """The k most cosine-similar other rows of E, ties to the lower index, as a stable argsort.

    Equal, bit for bit, to ``argsort(-S, kind='stable')[:, :k]`` of the paper's full similarity
    matrix ``S = En @ En.T`` with its diagonal set to -2. numpy computes that product with SYRK:
    one triangle, mirrored. Here too each similarity is computed once, in a tile of the upper
    triangle, and offered to both of its rows; the n x n matrix is never held. A row's bound
    (its k-th best so far) lets a tile skip most of its elements after one cheap pass.
    """
    n = E.shape[0]
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    k = min(k, n)
    # near-equal blocks of at least `tile` rows: no small tail, because BLAS libraries take
    # another code path for small products (OpenBLAS's small-matrix kernels) whose last bits
    # differ from the big product's; tiles this large give the paper's values exactly
    edges = np.linspace(0, n, max(1, n // tile) + 1).astype(np.intp)
    if len(edges) == 2:  # one block: the paper's own product
        S = En @ En.T
        np.fill_diagonal(S, -2)
        return _top_desc(S, k)
    top = _Top(n, k, En.dtype)
    blocks = list(zip(edges[:-1], edges[1:]))
    for lo, hi in blocks:  # first each row's own block: an exact first k, and a bound
        S = En[lo:hi] @ En[lo:hi].T  # the same SYRK as the paper's product, on this block
        np.fill_diagonal(S, -2)
        idx = _top_desc(S, k)
        top.start(lo, idx + lo, np.take_along_axis(S, idx, axis=1))
    for i, (lo, hi) in enumerate(blocks):  # then the upper triangle, offered to both sides
        for lo2, hi2 in blocks[i + 1 :]:
            top.offer(En[lo:hi] @ En[lo2:hi2].T, lo, lo2)
    out = top.idx
    short = np.flatnonzero(top.count < k)  # only with NaN: fewer than k comparable values
    if len(short):
        S = En[short] @ En.T
        S[np.arange(len(short)), short] = -2
        out[short] = _top_desc(S, k)
    return out


class _Top:
    """Each row's best k (value, column) so far, in stable order, and the least value that can
    still enter (each row's k-th best once it has k)."""

    def __init__(self, n, k, dtype):
        self.k = k
        self.val = np.full((n, k), -np.inf, dtype=dtype)
        self.idx = np.zeros((n, k), dtype=np.intp)
        self.count = np.zeros(n, dtype=np.intp)
        self.bound = np.full(n, -np.inf, dtype=dtype)

    def start(self, r0, idx, val):
        """Rows r0.. hold their first (up to k) neighbours, in stable order; NaN is not held."""
        rows = slice(r0, r0 + len(idx))
        w = idx.shape[1]
        self.idx[rows, :w], self.val[rows, :w] = idx, val
        self.count[rows] = np.cumprod(~np.isnan(val), axis=1).sum(axis=1)  # NaN sorts last
        full = np.flatnonzero(self.count[rows] == self.k) + r0
        self.bound[full] = self.val[full, self.k - 1]

    def offer(self, S, r0, c0):
        """Offer tile S = rows r0.. x columns c0.. to its rows, and, transposed, to its
        columns' rows: the mirrored block of the symmetric matrix."""
        # one pass for the largest of each group of a row's (a column's) elements: most groups
        # of most tiles hold nothing at or above their row's bound; only the others are read
        R, C = S.shape
        r, c = _at_or_above(S, self.bound[r0 : r0 + R], axis=1)
        self._merge(r + r0, c + c0, S[r, c])
        r, c = _at_or_above(S, self.bound[c0 : c0 + C], axis=0)
        self._merge(c + c0, r + r0, S[r, c])

    def _merge(self, rows, cols, vals):
        if not len(rows):
            return
        k = self.k
        R = np.unique(rows)
        held = np.arange(k) < self.count[R, None]
        rows = np.concatenate((np.broadcast_to(R[:, None], held.shape)[held], rows))
        cols = np.concatenate((self.idx[R][held], cols))
        vals = np.concatenate((self.val[R][held], vals))
        # lexsort is stable: by row, then value (largest first), then column (lower first)
        order = np.lexsort((cols, -vals, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        first = np.searchsorted(rows, R)
        sizes = np.diff(np.append(first, len(rows)))
        rank = np.arange(len(rows)) - np.repeat(first, sizes)
        keep = rank < k
        self.idx[rows[keep], rank[keep]] = cols[keep]
        self.val[rows[keep], rank[keep]] = vals[keep]
        self.count[R] = np.minimum(sizes, k)
        full = R[self.count[R] == k]
        self.bound[full] = self.val[full, k - 1]  # a k-th best only ever rises


def _at_or_above(S, bound, axis):
    """Row and column indices of the elements of S at or above ``bound`` (one bound per row of
    S for axis=1, per column for axis=0), reading only the groups whose largest reaches it.

    A group is every _GROUP-th element along the axis (then a tail): their maxima are an
    elementwise fmax of contiguous slices, which vectorises, unlike a maximum along a row.
    """
    X = S if axis == 1 else S.T  # lines along the last axis of X; S's memory is not moved
    lines, n = X.shape
    q = n // _GROUP
    r, c = [], []
    if q:
        blocks = (
            S[:, : q * _GROUP].reshape(lines, q, _GROUP)
            if axis == 1
            else S[: q * _GROUP].reshape(q, _GROUP, lines)
        )
        top = np.fmax.reduce(blocks, axis=1 if axis == 1 else 0)  # NaN skipped here,
        if axis == 0:
            top = top.T
        line, g = np.nonzero(top >= bound[:, None])  # and never passes a comparison
        at = g[:, None] + _GROUP * np.arange(q)
        r.append(np.broadcast_to(line[:, None], at.shape))
        c.append(at)
    if q * _GROUP < n:
        tail = X[:, q * _GROUP :]
        line = np.flatnonzero(np.fmax.reduce(tail, axis=1) >= bound)
        at = np.broadcast_to(np.arange(q * _GROUP, n), (len(line), n - q * _GROUP))
        r.append(np.broadcast_to(line[:, None], at.shape))
        c.append(at)
    line = np.concatenate([x.ravel() for x in r])
    at = np.concatenate([x.ravel() for x in c])
    hit = X[line, at] >= bound[line]
    line, at = line[hit], at[hit]
    return (line, at) if axis == 1 else (at, line)


def _top_desc(S, k):
    """First k columns of a stable argsort of ``-S`` (largest first, ties to the lower index).

    A cheap threshold first: the row is cut into at least k column chunks, and the k-th largest
    chunk maximum is at most the row's k-th largest value (those maxima are k different
    elements), so every element of the answer, and every tie with it, is at or above it. Only
    those candidates (typically a few times k) are then ordered exactly and stably.
    """
    nrows, n = S.shape
    if k >= n:
        return np.argsort(-S, axis=1, kind="stable")[:, :k]
    starts = np.arange(0, n, max(1, n // k))
    chunk_max = np.maximum.reduceat(S, starts, axis=1)
    t = -np.partition(-chunk_max, k - 1, axis=1)[:, k - 1 : k]
    rows, cols = np.nonzero(S >= t)  # noqa: SIM300 (S is an array)  NaN never passes: such rows fall back below
    counts = np.bincount(rows, minlength=nrows)
    out = np.empty((nrows, k), dtype=np.intp)
    short = counts < k  # only possible with NaN in the row; the full sort decides there
    if short.any():
        out[short] = np.argsort(-S[short], axis=1, kind="stable")[:, :k]
    order = np.lexsort((-S[rows, cols], rows))
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    ok = np.flatnonzero(~short)
    out[ok] = cols[order][first[ok, None] + np.arange(k)]
    return out
