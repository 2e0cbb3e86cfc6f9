"""A dataset's homology clusters (MMseqs2 easy-cluster), stored beside it by hash and parameters.

A clustering belongs to one set of proteins: ``ds.head(n)`` has its own hash and gets its own
clustering, computed on those n proteins (cutting the full set's clusters would not be the
same: which protein represents a cluster, and so who joins it, depends on the whole set).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.small_files import DATASET, read_home_json
from .dataset import Dataset

IDENTITY, COVERAGE = 0.3, 0.8  # the field's usual 30% identity over 80% of both sequences
FORMAT = 1


@dataclass(frozen=True)
class Clustering:
    dataset: str  # the dataset's sha256
    identity: float
    coverage: float
    labels: (
        tuple  # cluster number per protein in the dataset's split order, 0.. by first appearance
    )
    n_train: int
    tool: str  # e.g. "MMseqs2 18-8cc5c"

    @property
    def test_clusters(self) -> np.ndarray:
        return np.asarray(self.labels[self.n_train :], dtype=np.int64)

    @property
    def test_with_train_homolog(self) -> np.ndarray:
        """Per test protein: does its cluster hold a train protein?"""
        train = np.unique(np.asarray(self.labels[: self.n_train], dtype=np.int64))
        return np.isin(self.test_clusters, train)

    def summary(self) -> dict:
        sizes = np.bincount(np.asarray(self.labels, dtype=np.int64)) if self.labels else np.zeros(0)
        leak = self.test_with_train_homolog
        return {
            "clusters": int(sizes.size),
            # np.max, not sizes.max: numpy's stubs type no argument-free ndarray.max
            "largest": int(np.max(sizes, initial=0)),
            "singletons": int((sizes == 1).sum()),
            "test_with_train_homolog": float(leak.mean()) if leak.size else 0.0,
            "test_with_train_homolog_count": int(leak.sum()),
            "identity": self.identity,
            "coverage": self.coverage,
            "tool": self.tool,
            "dataset": self.dataset,
        }


def check_parameters(identity, coverage) -> tuple[float, float]:
    """The parameters as floats, or a one-line KitError (NaN fails both comparisons)."""
    for name, v in (("--identity", identity), ("--coverage", coverage)):
        if not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise KitError(f"{name} {v}: give a fraction above 0 and at most 1 (0.3 = 30%)")
    return float(identity), float(coverage)


def _path(sha256: str, identity: float, coverage: float) -> Path:
    return subdir("datasets") / "homology" / f"{sha256}-id{identity}-c{coverage}.json"


def labels_from_rows(rows, n: int) -> tuple:
    """Cluster numbers (0.. by first appearance in split order) from (representative, member)
    rows over ids 0..n-1: every protein exactly once, every representative its own member,
    or a KitError (never a partial clustering)."""
    rep_of: dict = {}
    for row in rows:
        if len(row) != 2:
            raise KitError(f"mmseqs cluster table: a row of {len(row)} fields, not 2")
        try:
            rep, member = (int(x) for x in row)
        except ValueError:
            raise KitError(
                f"mmseqs cluster table: an id that is not a protein index {row!r}"
            ) from None
        if not (0 <= rep < n and 0 <= member < n):
            raise KitError(
                f"mmseqs cluster table: unknown protein {max(rep, member)} (the set has {n})"
            )
        if member in rep_of:
            raise KitError(f"mmseqs cluster table: protein {member} is in two clusters")
        rep_of[member] = rep
    missing = n - len(rep_of)
    if missing:
        raise KitError(f"mmseqs cluster table: {missing} protein(s) missing; no clustering kept")
    if any(rep_of[r] != r for r in set(rep_of.values())):
        raise KitError("mmseqs cluster table: a representative outside its own cluster")
    number: dict = {}
    return tuple(number.setdefault(rep_of[i], len(number)) for i in range(n))


def _digest(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def _store(c: Clustering) -> None:
    doc = {"format": FORMAT, **asdict(c), "labels": list(c.labels)}
    doc["digest"] = _digest(doc)
    write_bytes(
        _path(c.dataset, c.identity, c.coverage),
        json.dumps(doc, sort_keys=True, separators=(",", ":")).encode(),
    )


def _first_appearance(labels) -> bool:
    top = -1
    for v in labels:
        if v > top + 1:
            return False
        top = max(top, v)
    return True


def _read(
    path: Path,
    sha256: str,
    n: int | None = None,
    n_train: int | None = None,
    params: tuple | None = None,
) -> Clustering | None:
    """The clustering stored at ``path`` for dataset ``sha256``, verified (its digest, format,
    dataset, numbering; ``n``, ``n_train`` and ``params`` when known); None when there is none."""
    try:
        doc = read_home_json(path, DATASET)
    except OSError as e:
        raise KitError(f"homology clustering {path} is unreadable ({e}); delete it") from None
    if doc is None:
        return None
    try:
        c = Clustering(
            doc["dataset"],
            float(doc["identity"]),
            float(doc["coverage"]),
            tuple(int(v) for v in doc["labels"]),
            int(doc["n_train"]),
            str(doc["tool"]),
        )
        whole = (
            doc["digest"] == _digest(doc)
            and doc["format"] == FORMAT
            and c.dataset == sha256
            and path.name == _path(sha256, c.identity, c.coverage).name
            and len(c.labels) == (len(c.labels) if n is None else n)
            and 0 < c.n_train < len(c.labels)
            and c.n_train == (n_train or c.n_train)
            and (c.identity, c.coverage) == (params or (c.identity, c.coverage))
            and _first_appearance(c.labels)
            and min(c.labels, default=0) >= 0
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        whole = False
    if not whole:
        raise KitError(
            f"homology clustering {path} does not match its digest or dataset "
            f"{sha256[:12]}; refusing it (delete it and run `kit data homology` again)"
        )
    return c


def stored_clustering(ds: Dataset, identity=IDENTITY, coverage=COVERAGE) -> Clustering | None:
    """The stored clustering of ``ds`` at these parameters, verified; None when there is none.
    Never computes (readers use it). A file that fails its checks is a KitError."""
    identity, coverage = check_parameters(identity, coverage)
    return _read(
        _path(ds.sha256, identity, coverage), ds.sha256, ds.n, ds.n_train, (identity, coverage)
    )


def stored_clusterings(sha256: str, n: int, n_train: int) -> list[Clustering]:
    """Every stored clustering of the dataset ``sha256`` of ``n`` proteins cut at ``n_train``
    (verified: a file of another size or cut is refused), the usual parameters (IDENTITY,
    COVERAGE) first, then by identity and coverage: what the readers show."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
        return []
    found = [
        c
        for p in sorted((subdir("datasets") / "homology").glob(f"{sha256}-id*-c*.json"))
        if (c := _read(p, sha256, n, n_train)) is not None
    ]
    return sorted(
        found,
        key=lambda c: ((c.identity, c.coverage) != (IDENTITY, COVERAGE), c.identity, c.coverage),
    )


def clustering(ds: Dataset, identity=IDENTITY, coverage=COVERAGE, progress=None) -> Clustering:
    """The clustering of ``ds``: the stored one, else computed with MMseqs2 and stored.
    ``progress(stage)`` hears "clustering" before mmseqs starts and "done" after."""
    identity, coverage = check_parameters(identity, coverage)
    found = stored_clustering(ds, identity, coverage)
    if found is not None:
        return found
    from .mmseqs import easy_cluster

    if progress:
        progress("clustering")
    tool, rows = easy_cluster(ds.seqs, identity, coverage)
    c = Clustering(ds.sha256, identity, coverage, labels_from_rows(rows, ds.n), ds.n_train, tool)
    _store(c)
    if progress:
        progress("done")
    return c
