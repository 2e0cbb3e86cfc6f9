"""A homology-disjoint split, about 2:1 by proteins, from a split seed: GraphPart's partitions of the
search edges (no train protein above the threshold to any test protein; the proteins that would
join the sides removed and named), or whole clusters on one side (``--method clusters``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import KitError
from .dataset import SPLIT_SEED, Dataset, check_name, find_stored, make_dataset, n_train_for
from .homology import Clustering, check_parameters
from .homology_edges import Edges, edges
from .partition import REMOVED, Graph, graphpart

METHODS = ("graphpart", "clusters")
PARTITIONS, TRAIN_PARTITIONS = 3, 2  # 2:1: two of three GraphPart partitions make the train side
WHY_REMOVED = (
    "above the identity threshold to proteins on both sides: kept, it would put a "
    "homolog of a train protein in test (GraphPart removes it)"
)


@dataclass(frozen=True)
class Split:
    dataset: Dataset
    target_train: int  # what a 2:1 cut of these proteins would give (kit.data.dataset.n_train_for)
    target_test: int
    largest: int  # the largest cluster (or partition group), which bounds how near 2:1
    train_clusters: int
    test_clusters: int
    method: str = "clusters"
    removed: tuple = ()  # the ids GraphPart removed, on neither side
    rounds: int = 0  # its removal rounds
    moved: int = 0  # proteins it moved to their neighbours' side

    def line(self) -> str:
        d = self.dataset
        y = np.asarray(d.labels)
        share = y.sum() * self.target_test / max(d.n, 1)
        return (
            f"train {d.n_train:,} / test {d.n_test:,} proteins (target 2:1 = "
            f"{self.target_train:,}/{self.target_test:,}); test positives "
            f"{int(y[d.n_train :].sum()):,} (target {share:,.0f} of {int(y.sum()):,})"
        )


def assign(c: Clustering, split_seed: int, y=None) -> np.ndarray:
    """Per cluster: True for test. Clusters in the split seed's order, each put on the side
    that brings the test side nearer its 2:1 share of proteins and, given the labels ``y``, of
    positives too: homologs share labels, so whole clusters by size alone can leave the test
    side with a fraction of the positives (27% overall, 6.5% in test on the synthetic set)."""
    labels = np.asarray(c.labels, dtype=np.int64)
    sizes = np.bincount(labels)
    target = len(labels) - n_train_for(len(labels))
    pos = (
        np.bincount(labels, weights=np.asarray(y, dtype=np.float64), minlength=sizes.size)
        if y is not None
        else np.zeros(sizes.size)
    )
    target_pos = pos.sum() * target / len(labels)

    def cost(n, p):  # relative misses of both targets, squared; the 2:1 of proteins first
        return 4 * ((n - target) / target) ** 2 + (
            ((p - target_pos) / target_pos) ** 2 if target_pos else 0.0
        )

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


def _too_far(ds: Dataset, n_test: int, n_train: int, target_test: int, why: str) -> None:
    """A side less than half its share is no 2:1 split: a KitError naming why."""
    if n_test < max(1, target_test / 2) or n_train < max(1, (ds.n - target_test) / 2):
        raise KitError(
            f"no homology-disjoint split of {ds.name!r} near 2:1 exists: {why} (test "
            f"side would be {n_test:,}, target {target_test:,}); try a higher --identity"
        )


def _new(ds: Dataset, name: str, train, test, split_seed: int, meta: dict) -> Dataset:
    """The new dataset: ``train`` then ``test`` (dataset positions), each shuffled by the seed."""
    rng = np.random.default_rng(split_seed)
    order = np.concatenate(
        [rng.permutation(np.asarray(train, np.int64)), rng.permutation(np.asarray(test, np.int64))]
    )
    pick = lambda xs: [xs[i] for i in order]  # noqa: E731
    new = make_dataset(
        name,
        ds.source,
        pick(ds.ids),
        pick(ds.seqs),
        pick(ds.labels),
        pick(ds.organisms),
        shuffle=False,
        meta=meta,
    )
    return replace(new, n_train=len(train), split_seed=split_seed)


def graphpart_split(ds: Dataset, e: Edges, name: str, split_seed: int = SPLIT_SEED) -> Split:
    """A new dataset ``name`` of ``ds``'s proteins partitioned by GraphPart's method on the
    search edges ``e``: no edge joins train and test; the proteins removed to make it so are
    on neither side and named in its meta. The split seed orders the proteins GraphPart meets
    (its linkage and moves follow that order), so another seed gives another valid split."""
    check_new(name)
    if e.dataset != ds.sha256:
        raise KitError(f"the homology edges given are not of dataset {ds.name!r}")
    n = ds.n
    target_test = n - n_train_for(n)
    meet = np.random.default_rng(split_seed).permutation(n)  # position k meets protein meet[k]
    at = np.empty(n, dtype=np.int64)
    at[meet] = np.arange(n)

    g = Graph.of(n, at[e.i], at[e.j], 1 - e.similarity)
    p = graphpart(
        g, [ds.labels[k] for k in meet], PARTITIONS, TRAIN_PARTITIONS, threshold=1 - e.identity
    )
    side = np.empty(n, dtype=np.int64)
    side[meet] = p.part
    train, test = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    removed = np.flatnonzero(side == REMOVED)
    _too_far(
        ds,
        test.size,
        train.size,
        target_test,
        f"GraphPart removed {removed.size:,} of {n:,} proteins to keep the sides apart",
    )
    gone = [ds.ids[k] for k in removed]
    meta = {
        "split": "homology",
        "method": "graphpart",
        "source_dataset": ds.sha256,
        "source_name": ds.name,
        "identity": e.identity,
        "coverage": e.coverage,
        "search_tool": e.tool,
        "edges": e.digest,
        "edge_count": int(e.i.size),
        "partitions": PARTITIONS,
        "removed": len(gone),
        "removed_ids": gone,
        "removed_why": WHY_REMOVED,
    }
    new = _new(ds, name, train, test, split_seed, meta)
    return Split(
        new, n - target_test, target_test, 0, 0, 0, "graphpart", tuple(gone), p.rounds, p.moved
    )


def homology_split(ds: Dataset, c: Clustering, name: str, split_seed: int = SPLIT_SEED) -> Split:
    """A new dataset ``name`` of ``ds``'s proteins whose train and test share no cluster of
    ``c``, records reordered (each side shuffled by the split seed); not yet saved."""
    check_new(name)
    if c.dataset != ds.sha256 or len(c.labels) != ds.n:
        raise KitError(f"the clustering given is not of dataset {ds.name!r}")
    labels = np.asarray(c.labels, dtype=np.int64)
    sizes = np.bincount(labels)  # np.max(sizes): numpy's stubs type no argument-free .max()
    n = ds.n
    target_test = n - n_train_for(n)
    test_side = assign(c, split_seed, ds.labels)
    on_test = test_side[labels]
    n_test = int(on_test.sum())
    _too_far(
        ds,
        n_test,
        n - n_test,
        target_test,
        f"its largest cluster holds {np.max(sizes):,} of {n:,} proteins",
    )
    meta = {
        "split": "homology",
        "source_dataset": ds.sha256,
        "source_name": ds.name,
        "identity": c.identity,
        "coverage": c.coverage,
        "clustering_tool": c.tool,
    }
    new = _new(ds, name, np.flatnonzero(~on_test), np.flatnonzero(on_test), split_seed, meta)
    return Split(
        new,
        n - target_test,
        target_test,
        int(np.max(sizes)),
        int((~test_side).sum()),
        int(test_side.sum()),
    )


def _hex(v, what: str) -> str:
    if not (isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)):
        raise KitError(f"the bundle's split record: {what} is not a sha256")
    return v


def recompute(record: dict, sha: str, source: Dataset) -> Dataset:
    """A GraphPart split made again here from its ``record`` (a dataset summary, as a bundle
    holds it) and its source dataset ``source``: the search edges recomputed and checked
    against the recorded digest, then the partitioning; a KitError saying what differs when
    the result cannot be dataset ``sha`` (not saved: the caller does)."""
    rec = record if isinstance(record, dict) else {}
    if rec.get("split") != "homology" or rec.get("method") != "graphpart":
        raise KitError("the bundle's dataset is not a GraphPart split")
    want = _hex(rec.get("edges"), "its edges' digest")
    if _hex(rec.get("source_dataset"), "its source dataset") != source.sha256:
        raise KitError(f"dataset {source.name!r} here is not the split's source")
    identity, coverage = check_parameters(rec.get("identity"), rec.get("coverage"))
    seed = rec.get("split_seed")
    if type(seed) is not int or not 0 <= seed < 2**63:
        raise KitError("the bundle's split record: its split seed is not an integer")
    e, _ = edges(source, identity, coverage)
    if e.digest != want:
        count = rec.get("edge_count")
        theirs = f"{count:,} edges" if type(count) is int else "its edges"
        raise KitError(
            f"the split of {source.name!r} cannot be remade here: the search finds "
            f"{e.i.size:,} edges with {e.tool} (digest {e.digest[:12]}), the bundle "
            f"recorded {theirs} with {str(rec.get('search_tool'))[:40]} (digest "
            f"{want[:12]}): homology search differs between the machines"
        )
    split = graphpart_split(source, e, str(rec.get("name", "")), seed)
    if split.dataset.sha256 != sha:
        raise KitError(
            f"the split of {source.name!r} remade here from the same edges is "
            f"{split.dataset.sha256[:12]}, not the bundle's {sha[:12]}"
        )
    return split.dataset
