"""The cluster bootstrap: the twelve verdicts with test clusters, not proteins, as the draws.

Homologous test proteins are not independent draws, so resampling them one by one makes the
protein bootstrap's intervals too narrow. Here each resample draws as many clusters as there are,
with replacement, and keeps every member of a drawn cluster: a protein's count is its cluster's.
Both models of a pair are scored under the same counts (paired, as the protein bootstrap), with
the same seed and number of resamples. Clusters are numbered in order of first appearance in
the test set and drawn by the very call that draws proteins (``resample_weights`` with the
cluster count for n), so a clustering of singletons reproduces the protein bootstrap bit for bit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core.errors import KitError
from ..runs.store import Store
from ..worker.pipeline import MODELS
from .records import ClusterVerdict
from .verdicts import KEYS, RESAMPLES, SEED, VERSION, bootstrap, resample_weights, run_verdicts


def ranks(test_clusters: ArrayLike) -> np.ndarray:
    """Each test protein's cluster, renumbered 0, 1, ... in order of first appearance: what the
    bootstrap depends on (the partition and the test order), not the clustering's own labels."""
    labels = np.asarray(test_clusters)
    if labels.ndim != 1 or len(labels) == 0:
        raise KitError(f"a clustering needs one cluster per test protein; got shape {labels.shape}")
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique's clusters, by first appearance
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    out: np.ndarray = rank[inverse.ravel()]
    return out


def digest(test_clusters: ArrayLike) -> str:
    """The clustering's key in the store's verdict cache: sha256 of its ranks."""
    return hashlib.sha256(ranks(test_clusters).tobytes()).hexdigest()


@lru_cache(maxsize=8)
def _by_case(rank_bytes: bytes, resamples: int, seed: int) -> np.ndarray:
    rank = np.frombuffer(rank_bytes, np.int64)
    counts = resample_weights(int(np.max(rank)) + 1, resamples, seed)  # (resamples, clusters)
    w = np.ascontiguousarray(counts.T[rank], dtype=np.float64)  # a member takes its cluster's row
    w.setflags(write=False)
    return w


def cluster_weights(
    test_clusters: ArrayLike, resamples: int = RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """(n, resamples) float64 counts, case-major as ``bootstrap`` takes them: how often each test
    protein's cluster is drawn in each resample. Cached per clustering (its ranks)."""
    return _by_case(ranks(test_clusters).tobytes(), resamples, seed)


def cluster_bootstrap(
    probs: Mapping[str, np.ndarray],
    y: ArrayLike,
    test_clusters: ArrayLike,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    models: Sequence[str] = MODELS,
) -> dict[str, Any]:
    """The verdicts of every pair of ``models`` (kit's four: the twelve) under the cluster
    bootstrap, in ``bootstrap``'s shape."""
    labels = np.asarray(y)
    if len(np.asarray(test_clusters)) != len(labels):
        raise KitError(
            f"the clustering has {len(np.asarray(test_clusters))} test proteins, "
            f"the run {len(labels)}: it belongs to another split of the dataset"
        )
    return bootstrap(
        probs,
        labels,
        resamples,
        seed,
        weights=cluster_weights(test_clusters, resamples, seed),
        models=models,
    )


def run_cluster_bootstrap(store: Store, run_id: str, test_clusters: ArrayLike) -> dict[str, Any]:
    """A run's verdicts under the cluster bootstrap, computed once per clustering and kept in
    the store beside (never in place of) its protein bootstrap."""
    key = digest(test_clusters)
    cached = store.verdicts(run_id, VERSION, clustering=key)
    if cached is not None:
        return cached
    probs = {m: store.array(run_id, m) for m in MODELS}
    v = cluster_bootstrap(probs, store.array(run_id, "y_test"), test_clusters)
    store.cache_verdicts(run_id, VERSION, v, clustering=key)
    return v


def _width_ratio(protein: dict[str, Any], cluster: dict[str, Any]) -> float | None:
    """Cluster width over protein width; None when the protein interval is a point (the two
    models agree on every protein, so no ratio measures anything)."""
    width = protein["hi"] - protein["lo"]
    return None if not width > 0 else float((cluster["hi"] - cluster["lo"]) / width)


def compare(
    protein: dict[str, Any], cluster: dict[str, Any], keys: Sequence[str] = KEYS
) -> list[ClusterVerdict]:
    """The verdicts ``keys`` (kit's twelve) under both bootstraps of one run, side by side."""
    return [
        ClusterVerdict(
            verdict=k,
            diff=protein[k]["diff"],
            protein_lo=protein[k]["lo"],
            protein_hi=protein[k]["hi"],
            protein_verdict=protein[k]["verdict"],
            cluster_lo=cluster[k]["lo"],
            cluster_hi=cluster[k]["hi"],
            cluster_verdict=cluster[k]["verdict"],
            width_ratio=_width_ratio(protein[k], cluster[k]),
            changed=protein[k]["verdict"] != cluster[k]["verdict"],
            lost=protein[k]["verdict"] != "=" and cluster[k]["verdict"] == "=",
        )
        for k in keys
    ]


def run_cluster_verdicts(
    store: Store, run_id: str, test_clusters: ArrayLike
) -> list[ClusterVerdict]:
    """A run's twelve verdicts under proteins and under clusters (both cached in the store)."""
    return compare(run_verdicts(store, run_id), run_cluster_bootstrap(store, run_id, test_clusters))
