"""GraphPart's partitioning (kit.data.partition) against the `graph-part` package on the same
edges, partition for partition; and what a split must hold whatever the edges: no edge across
the sides, the removed proteins on neither."""

import contextlib
import io
import warnings

import numpy as np
import pytest

from kit.core.errors import KitError
from kit.data.partition import REMOVED, Graph, graphpart


def _world(seed, n=300, families=30, cross=60):
    """Families whose members are joined at random (31-99% identity), and cross-family pairs
    at 31-50%: GraphPart has groups to link and edges to remove. Identities at 6 digits, so
    some tie. Returns (graph, labels, identity per pair as the package reads them)."""
    rng = np.random.default_rng(seed)
    fam = rng.integers(0, families, n)
    pairs = {}
    for a in range(n):
        for b in range(a + 1, n):
            if fam[a] == fam[b] and rng.random() < 0.5:
                pairs[(a, b)] = round(float(rng.uniform(0.31, 0.99)), 6)
    for _ in range(cross):
        a, b = sorted(int(x) for x in rng.integers(0, n, 2))
        if a != b:
            pairs[(a, b)] = max(pairs.get((a, b), 0), round(float(rng.uniform(0.31, 0.5)), 6))
    keys = sorted(pairs)
    ident = [pairs[k] for k in keys]
    g = Graph.of(n, [k[0] for k in keys], [k[1] for k in keys], [1 - v for v in ident])
    return g, [int(v) for v in rng.random(n) < 0.3], dict(zip(keys, ident, strict=True))


def _package(tmp_path, g, labels, ident, k, test_ratio=0.0):
    """The package's partition per protein (REMOVED for what it removed), from a FASTA of the
    labels and an edge list of the identities: its precomputed-edges mode."""
    graph_part = pytest.importorskip("graph_part.graph_part")
    fasta, edges = tmp_path / f"in{k}.fa", tmp_path / f"edges{k}.csv"
    fasta.write_text("".join(f">{x}|label={labels[x]}\nACDE\n" for x in range(g.n)))
    edges.write_text("".join(f"{a},{b},{v!r}\n" for (a, b), v in sorted(ident.items())))
    config = dict(
        alignment_mode="precomputed",
        fasta_file=str(fasta),
        edge_file=str(edges),
        metric_column=2,
        threshold=0.3,
        transformation="one-minus",
        partitions=k,
        out_file=str(tmp_path / "out"),
        priority_name=None,
        labels_name="label",
        initialization_mode="slow-nn",
        test_ratio=test_ratio,
        val_ratio=0.0,
        save_checkpoint_path=None,
        allow_moving=True,
    )
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # its pandas deprecations, not ours
        df = graph_part.run_partitioning(
            config, write_output_file=False, write_json_report=False, verbose=False
        )
    part = np.full(g.n, REMOVED)
    for ac, c in df["cluster"].items():
        part[int(ac)] = int(c)
    return part


def _crossing(g, part) -> int:
    a, b = part[g.i], part[g.j]
    return int(((a != b) & (a != REMOVED) & (b != REMOVED)).sum())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k, ratio, n_train", [(3, 0.0, None), (5, 0.0, None), (10, 0.3, 7)])
def test_the_same_partitions_as_the_graph_part_package(tmp_path, seed, k, ratio, n_train):
    g, labels, ident = _world(seed)
    theirs = _package(tmp_path, g, labels, ident, k, ratio)
    assert _crossing(g, theirs) == 0  # the package finished clean: the two must then agree
    mine = graphpart(g, labels, k, n_train)
    assert np.array_equal(mine.part, theirs)
    assert mine.removed.size > 0 and mine.rounds > 0  # the removal step was exercised


@pytest.mark.parametrize("seed", range(4))
def test_no_edge_joins_the_sides_and_the_removed_are_on_neither(seed):
    g, labels, _ = _world(seed, n=400, families=12, cross=400)  # dense: much to remove
    p = graphpart(g, labels, 3, 2)
    assert _crossing(g, p.part) == 0
    assert set(np.unique(p.part)) <= {REMOVED, 0, 1}
    assert p.removed.size == int((p.part == REMOVED).sum()) > 0
    sides = np.bincount(p.part[p.part >= 0], minlength=2)
    assert sides[1] > 0 and sides[0] > sides[1]  # two partitions of three train, one test


def test_a_chain_longer_than_a_side_is_cut_by_removal():
    """A path 0-1-2-...-59: linkage cannot hold it on one side (a side is n/3), so the cut
    between partitions costs proteins, and no edge crosses after."""
    n = 60
    g = Graph.of(n, np.arange(n - 1), np.arange(1, n), np.full(n - 1, 0.5))
    p = graphpart(g, [0, 1] * 30, 3, 2)
    assert _crossing(g, p.part) == 0 and 0 < p.removed.size < 10


def test_edges_are_read_once_each_at_their_closest():
    g = Graph.of(4, [0, 1, 2, 2, 3], [1, 0, 2, 3, 2], [0.5, 0.2, 0.1, 0.4, 0.6])
    assert g.i.tolist() == [0, 2] and g.j.tolist() == [1, 3]
    assert g.distance.tolist() == [0.2, 0.4]
    assert g.neighbours() == [[1], [0], [3], [2]]


@pytest.mark.parametrize(
    "i, j, d, why",
    [
        # the values are named, and where (#43)
        ([0, 1], [1, 5], [0.1, 0.2], "edge 1 joins proteins 1 and 5, outside 0..3"),
        ([-1], [2], [0.1], "edge 0 joins proteins -1 and 2, outside"),
        ([0, 1], [1, 2], [0.1, float("nan")], "edge 1's distance is nan, not a finite number"),
        ([0, 1], [1], [0.1], "one length"),
    ],
)
def test_bad_edges_are_one_line(i, j, d, why):
    with pytest.raises(KitError, match=why):
        Graph.of(4, i, j, d)


def test_bad_partition_counts_are_one_line():
    g = Graph.of(6, [0], [1], [0.1])
    with pytest.raises(KitError, match="partitions"):
        graphpart(g, None, 1)
    with pytest.raises(KitError, match="train partitions"):
        graphpart(g, None, 3, 3)
