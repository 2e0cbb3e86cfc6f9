"""A homology-disjoint split: whole clusters on one side, about 2:1 by proteins, from a split seed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import KitError
from .dataset import SPLIT_SEED, Dataset, check_name, find_stored, make_dataset, n_train_for
from .homology import Clustering


@dataclass(frozen=True)
class Split:
    dataset: Dataset
    target_train: int  # what a 2:1 cut of these proteins would give (kit.data.dataset.n_train_for)
    target_test: int
    largest: int       # the largest cluster, which bounds how close to 2:1 a split can come
    train_clusters: int
    test_clusters: int

    def line(self) -> str:
        d = self.dataset
        y = np.asarray(d.labels)
        share = y.sum() * self.target_test / max(d.n, 1)
        return (f"train {d.n_train:,} / test {d.n_test:,} proteins (target 2:1 = "
                f"{self.target_train:,}/{self.target_test:,}); test positives "
                f"{int(y[d.n_train:].sum()):,} (target {share:,.0f} of {int(y.sum()):,})")


def assign(c: Clustering, split_seed: int, y=None) -> np.ndarray:
    """Per cluster: True for test. Clusters in the split seed's order, each put on the side
    that brings the test side nearer its 2:1 share of proteins and, given the labels ``y``, of
    positives too: homologs share labels, so whole clusters by size alone can leave the test
    side with a fraction of the positives (27% overall, 6.5% in test on the synthetic set)."""
    labels = np.asarray(c.labels, dtype=np.int64)
    sizes = np.bincount(labels)
    target = len(labels) - n_train_for(len(labels))
    pos = (np.bincount(labels, weights=np.asarray(y, dtype=np.float64), minlength=sizes.size)
           if y is not None else np.zeros(sizes.size))
    target_pos = pos.sum() * target / len(labels)

    def cost(n, p):  # relative misses of both targets, squared; the 2:1 of proteins first
        return 4 * ((n - target) / target) ** 2 + (((p - target_pos) / target_pos) ** 2
                                                   if target_pos else 0.0)

    test = np.zeros(sizes.size, dtype=bool)
    held = held_pos = 0.0
    order = np.random.default_rng(split_seed).permutation(sizes.size)
    for _ in range(20):  # a first pass in the seed's order, then moves that still help
        moved = False
        for k in order:
            sign = -1 if test[k] else 1
            n, p = held + sign * sizes[k], held_pos + sign * pos[k]
            if cost(n, p) < cost(held, held_pos) - 1e-12:
                test[k], held, held_pos, moved = not test[k], n, p, True
        if not moved:
            break
    return test


def check_new(name: str) -> str:
    """A name a new dataset may take: allowed (check_name) and not taken."""
    check_name(name)
    if find_stored(name) is not None:
        raise KitError(f"a dataset named {name!r} already exists; choose another --name")
    return name


def homology_split(ds: Dataset, c: Clustering, name: str, split_seed: int = SPLIT_SEED) -> Split:
    """A new dataset ``name`` of ``ds``'s proteins whose train and test share no cluster of
    ``c``, records reordered (each side shuffled by the split seed); not yet saved."""
    check_new(name)
    if c.dataset != ds.sha256 or len(c.labels) != ds.n:
        raise KitError(f"the clustering given is not of dataset {ds.name!r}")
    labels = np.asarray(c.labels, dtype=np.int64)
    sizes = np.bincount(labels)
    n = ds.n
    target_test = n - n_train_for(n)
    test_side = assign(c, split_seed, ds.labels)
    on_test = test_side[labels]
    n_test = int(on_test.sum())
    # a side less than half its share is no 2:1 split: one cluster holds too much of the set
    if n_test < max(1, target_test / 2) or n - n_test < max(1, (n - target_test) / 2):
        raise KitError(f"no homology-disjoint split of {ds.name!r} near 2:1 exists: its largest "
                       f"cluster holds {sizes.max():,} of {n:,} proteins (test side would be "
                       f"{n_test:,}, target {target_test:,}); try a higher --identity")
    rng = np.random.default_rng(split_seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(~on_test)),
                            rng.permutation(np.flatnonzero(on_test))])
    meta = {"split": "homology", "source_dataset": ds.sha256, "source_name": ds.name,
            "identity": c.identity, "coverage": c.coverage, "clustering_tool": c.tool}
    pick = lambda xs: [xs[i] for i in order]  # noqa: E731
    new = make_dataset(name, ds.source, pick(ds.ids), pick(ds.seqs), pick(ds.labels),
                       pick(ds.organisms), shuffle=False, meta=meta)
    new = replace(new, n_train=n - n_test, split_seed=split_seed)
    return Split(new, n - target_test, target_test, int(sizes.max()),
                 int((~test_side).sum()), int(test_side.sum()))

