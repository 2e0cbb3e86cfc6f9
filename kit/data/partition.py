"""GraphPart's partitioning (Teufel et al. 2023) on a graph of homology edges, in numpy.

Three steps, each as the `graph-part` package (1.0.2) does them, so that the same edges give the
same partitions (tests/data/test_partition.py runs the package beside this module):
1. restricted nearest-neighbour linkage: edges in order of distance join two groups unless either
   already holds a partition's share of proteins or together they would reach a class's share;
2. the groups assigned to partitions, each to the one its classes fill least (class-balanced);
3. removal: every protein moves to the partition most of its neighbours are in, then the most
   connected proteins across partitions are removed (1 + log10(round) % of them a round), until
   no edge crosses.
For a train/test split, partitions are first merged as GraphPart merges them (the train side is
the combination of partitions most connected to each other), then step 3 runs on the two sides.
Where kit differs it says so: an edge here is any edge given (the caller keeps only the pairs it
counts), and step 3 repeats until nothing crosses (the package stops after two calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..core.errors import KitError

REMOVED = -1


@dataclass(frozen=True)
class Graph:
    """Undirected edges i < j between proteins 0..n-1, each once, with a distance (1 - identity)."""

    n: int
    i: np.ndarray
    j: np.ndarray
    distance: np.ndarray

    @classmethod
    def of(cls, n: int, i, j, distance) -> Graph:
        """The graph of these pairs: self-pairs dropped, each pair once at its smallest distance,
        in (i, j) order (the order GraphPart meets them in); indices outside 0..n-1 refused."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        d = np.asarray(distance, np.float64)
        if not (i.shape == j.shape == d.shape and i.ndim == 1):
            raise KitError("homology edges: i, j and distance must be three arrays of one length")
        if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
            edge = int(np.argmax((i < 0) | (j < 0) | (i >= n) | (j >= n)))
            raise KitError(
                f"homology edges: edge {edge} joins proteins {i[edge]} and {j[edge]}, "
                f"outside 0..{n - 1}"
            )
        if not np.isfinite(d).all():
            edge = int(np.argmax(~np.isfinite(d)))
            raise KitError(
                f"homology edges: edge {edge}'s distance is {d[edge]}, not a finite number"
            )
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        keep = lo != hi
        lo, hi, d = lo[keep], hi[keep], d[keep]
        order = np.lexsort((d, hi, lo))  # by pair, smallest distance first
        lo, hi, d = lo[order], hi[order], d[order]
        first = np.ones(lo.size, dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        return cls(int(n), lo[first], hi[first], d[first])

    def neighbours(self) -> list:
        """Per protein, its neighbours in ascending order (as GraphPart's graph holds them)."""
        both_a = np.concatenate([self.i, self.j])
        both_b = np.concatenate([self.j, self.i])
        order = np.lexsort((both_b, both_a))
        a, b = both_a[order], both_b[order]
        cuts = np.searchsorted(a, np.arange(self.n + 1))
        return [b[cuts[k] : cuts[k + 1]].tolist() for k in range(self.n)]


@dataclass(frozen=True)
class Partition:
    part: np.ndarray  # per protein: its partition (0..k-1), or REMOVED
    rounds: int  # removal rounds run
    moved: int  # proteins moved to their neighbours' partition, over all rounds

    @property
    def removed(self) -> np.ndarray:
        return np.flatnonzero(self.part == REMOVED)


def _classes(labels, n: int) -> np.ndarray:
    """Class codes 0.. by first appearance (GraphPart numbers its labels so)."""
    if labels is None:
        return np.zeros(n, dtype=np.int64)
    labels = list(labels)
    if len(labels) != n:
        raise KitError(f"{len(labels)} labels for {n} proteins")
    code: dict = {}
    return np.array([code.setdefault(v, len(code)) for v in labels], dtype=np.int64)


def _find(parent: list, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def linkage(g: Graph, classes: np.ndarray, k: int, threshold: float) -> np.ndarray:
    """Step 1: a group number per protein, numbered by each group's first protein."""
    n = g.n
    part_size = n // k
    n_classes = int(classes.max()) + 1 if n else 0
    limits = np.bincount(classes, minlength=n_classes) // k
    parent = list(range(n))
    size = [1] * n
    counts = [np.bincount([c], minlength=n_classes) for c in classes.tolist()]
    for e in np.argsort(g.distance):  # np.argsort as GraphPart sorts: the same order for ties
        if g.distance[e] > threshold:
            break
        a, b = _find(parent, int(g.i[e])), _find(parent, int(g.j[e]))
        if a == b or size[a] >= part_size or size[b] >= part_size:
            continue
        joined = counts[a] + counts[b]
        if (joined >= limits).any():
            continue
        parent[b], size[a], counts[a] = a, size[a] + size[b], joined
    roots = np.array([_find(parent, x) for x in range(n)], dtype=np.int64)
    _, first, which = np.unique(roots, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)  # numbered by each group's first protein
    return rank[which.reshape(-1)]


def assign(groups: np.ndarray, classes: np.ndarray, k: int) -> np.ndarray:
    """Step 2: a partition per protein, each group (in number order) to the partition its
    classes fill least (GraphPart's partition_assignment, float for float)."""
    n_classes = int(classes.max()) + 1 if classes.size else 0
    loc = np.ones((k, n_classes))
    part = np.zeros(groups.size, dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    cuts = np.flatnonzero(np.diff(groups[order])) + 1
    for members in np.split(order, cuts) if groups.size else []:
        u, count = np.unique(classes[members], return_counts=True)
        trial = loc.copy()
        trial[:, u] += count
        best = int(np.argmin(np.sum(loc / trial, axis=1)))
        loc[best, u] += count
        part[members] = best
    return part


def connections(g: Graph, part: np.ndarray, k: int) -> np.ndarray:
    """Edges between (and within) partitions, each edge counted from both ends."""
    out = np.zeros((k, k))
    alive = (part[g.i] != REMOVED) & (part[g.j] != REMOVED)
    np.add.at(out, (part[g.i][alive], part[g.j][alive]), 1)
    np.add.at(out, (part[g.j][alive], part[g.i][alive]), 1)
    return out


def merge(g: Graph, part: np.ndarray, k: int, n_train: int) -> np.ndarray:
    """Partitions merged into train (0) and test (1): train the ``n_train`` partitions most
    connected among themselves, test the rest (GraphPart's train/test combination)."""
    conn = connections(g, part, k)
    best: tuple[int, ...] = ()
    score = -1.0
    for comb in combinations(range(k), n_train):
        s = float(conn[np.ix_(comb, comb)].sum())
        if s > score:
            best, score = comb, s
    return np.where(np.isin(part, best), 0, 1)


def _cross(g: Graph, part: np.ndarray) -> bool:
    a, b = part[g.i], part[g.j]
    return bool(((a != b) & (a != REMOVED) & (b != REMOVED)).any())


def _remove_round(nbrs: list, part: list, alive: list, round_no: int, move: bool) -> tuple:
    """One of GraphPart's removal rounds, in place on plain lists (the loop is per protein):
    (proteins moved, connectivity left, whether every connected protein was removed)."""
    moved, between = 0, {}
    for x, around in enumerate(nbrs):
        if not (around and alive[x]):
            continue
        near = [y for y in around if alive[y]]
        if not near:
            continue
        was = part[x]
        if move:
            seen: dict = {}
            for y in near:  # counted in neighbour order: the first most common wins a tie
                seen[part[y]] = seen.get(part[y], 0) + 1
            top = max(seen.items(), key=lambda kv: kv[1])[0]
            if top != was:
                part[x] = top
                moved += 1
        # counted against the partition x was in before it moved: the package does so (its
        # `cluster` is read before the move), and which proteins go depends on it
        across = sum(1 for y in near if part[y] != was)
        if across:
            between[x] = across
    total = sum(between.values())
    take = int(len(between) * np.log10(round_no) / 100) + 1
    worst = sorted(between.items(), key=lambda kv: kv[1], reverse=True)[:take]
    for x, _ in worst:
        alive[x] = False
    return moved, total, len(worst) == len(between)


def separate(g: Graph, part: np.ndarray, move: bool = True) -> Partition:
    """Step 3: moves and removals until no edge joins two partitions (REMOVED in ``part``)."""
    part_l = [int(p) for p in part]
    alive = [True] * g.n
    nbrs = g.neighbours()
    rounds = moved = 0

    def now() -> np.ndarray:
        return np.where(np.array(alive, dtype=bool), np.array(part_l, dtype=np.int64), REMOVED)

    while _cross(g, now()):
        # one call of GraphPart's remover: rounds until nothing crosses or all that cross go
        r = 0
        while True:
            r += 1
            m, total, last = _remove_round(nbrs, part_l, alive, r, move)
            rounds, moved = rounds + 1, moved + m
            if not any(alive) or total == 0 or last:
                break
    return Partition(now(), rounds, moved)


def graphpart(
    g: Graph,
    labels=None,
    k: int = 3,
    n_train: int | None = None,
    threshold: float = 0.7,
    move: bool = True,
) -> Partition:
    """GraphPart's partitions of ``g``: ``k`` of them, or, given ``n_train``, two sides (0 train:
    ``n_train`` of the k partitions merged; 1 test) with no edge between them."""
    classes = _classes(labels, g.n)
    if not 2 <= k <= max(2, g.n):
        raise KitError(
            f"{k} partitions of {g.n} proteins: give at least 2 and at most one a protein"
        )
    part = assign(linkage(g, classes, k, threshold), classes, k)
    if n_train is not None:
        if not 1 <= n_train < k:
            raise KitError(f"{n_train} train partitions of {k}: give 1 to {k - 1}")
        part = merge(g, part, k, n_train)
    return separate(g, part, move)
