"""A dataset's homology edges and leakage hits (MMseqs2 searches), cached by hash and parameters.

Two searches, each at kit's identity over coverage: the set against itself (the edges GraphPart
partitions) and its test proteins against its train proteins (the leakage rule: any train protein
above the threshold). Both are stored beside the dataset's clusterings, each with a digest of
what it holds, and read back only when the digest, dataset and parameters all match.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.atomic import write_bytes
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.small_files import DATASET, read_home_json
from .dataset import Dataset
from .homology import COVERAGE, IDENTITY, check_parameters
from .partition import Graph

FORMAT = 1
_MAX_EDGES = 200_000_000  # a stored file claiming more is not one kit wrote


@dataclass(frozen=True)
class Edges:
    dataset: str  # the dataset's sha256
    identity: float
    coverage: float
    tool: str
    i: np.ndarray  # int64, i < j, each pair once
    j: np.ndarray
    similarity: np.ndarray  # the pair's highest identity either way round (mmseqs fident)

    @property
    def digest(self) -> str:
        return edges_digest(self.i, self.j, self.similarity, self.identity, self.coverage)

    def graph(self, n: int):
        return Graph.of(n, self.i, self.j, 1 - self.similarity)


def edges_digest(i, j, similarity, identity: float, coverage: float) -> str:
    """SHA-256 over the pairs and their identities in one canonical byte order, and the
    parameters: what a second machine recomputes to say whether its edges are these."""
    h = hashlib.sha256(f"kit-homology-edges/{FORMAT}/{identity!r}/{coverage!r}/".encode())
    for a, dtype in ((i, "<i8"), (j, "<i8"), (similarity, "<f8")):
        h.update(np.ascontiguousarray(a, dtype=dtype).tobytes())
    return h.hexdigest()


def _folder() -> Path:
    return subdir("datasets") / "homology"


def _edges_path(sha: str, identity: float, coverage: float) -> Path:
    return _folder() / f"{sha}-edges-id{identity}-c{coverage}.npz"


def _hits_path(sha: str, identity: float, coverage: float) -> Path:
    # not "{sha}-id*-c*.json": that is a clustering's name (kit.data.homology globs it)
    return _folder() / f"{sha}-hits-id{identity}-c{coverage}.json"


def _canonical(n: int, i, j, f) -> tuple:
    """Each pair once as i < j at its highest identity, sorted: the same edges whichever way
    round the search found them."""
    g = Graph.of(n, i, j, -np.asarray(f, np.float64))  # its smallest "distance": the highest f
    return g.i, g.j, -g.distance


def _save_edges(e: Edges) -> None:
    buf = io.BytesIO()
    meta = json.dumps(
        {
            "format": FORMAT,
            "dataset": e.dataset,
            "identity": e.identity,
            "coverage": e.coverage,
            "tool": e.tool,
            "digest": e.digest,
        }
    )
    np.savez(buf, i=e.i, j=e.j, similarity=e.similarity, meta=np.array(meta))
    write_bytes(_edges_path(e.dataset, e.identity, e.coverage), buf.getvalue())


def _refuse(path: Path, why: str) -> KitError:
    return KitError(
        f"homology edges {path} {why}; refusing them (delete the file and run "
        f"`kit data split` or `kit data homology` again)"
    )


def _load_edges(path: Path, ds: Dataset, identity: float, coverage: float) -> Edges | None:
    """The stored edges at ``path``, verified against their digest, ``ds`` and the parameters;
    None when there are none."""
    if not path.is_file():
        return None
    try:
        # bounded before any array is read: 24 bytes an edge, and the meta
        if path.stat().st_size > _MAX_EDGES * 24 + (1 << 20):
            raise _refuse(path, "are larger than kit stores")
        with np.load(path, allow_pickle=False) as z:
            if set(z.files) != {"i", "j", "similarity", "meta"}:
                raise _refuse(path, "hold other arrays than kit writes")
            meta = json.loads(str(z["meta"]))
            i, j, f = z["i"], z["j"], z["similarity"]
    except KitError:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as e:
        raise _refuse(path, f"are unreadable ({type(e).__name__})") from None
    ok = (
        isinstance(meta, dict)
        and meta.get("format") == FORMAT
        and meta.get("dataset") == ds.sha256
        and meta.get("identity") == identity
        and meta.get("coverage") == coverage
        and isinstance(meta.get("tool"), str)
        and i.dtype == j.dtype == np.int64
        and f.dtype == np.float64
        and i.ndim == j.ndim == f.ndim == 1
        and i.size == j.size == f.size
    )
    if not ok:
        raise _refuse(path, f"are not dataset {ds.sha256[:12]}'s at these parameters")
    bad = (
        ((i < 0) | (j >= ds.n) | (i >= j) | ~np.isfinite(f) | (f < 0) | (f > 1))
        if i.size
        else np.zeros(0, bool)
    )
    if bad.any():
        k = int(np.argmax(bad))
        raise _refuse(
            path,
            f"hold a pair or identity outside the dataset (edge {k}: proteins "
            f"{i[k]} and {j[k]} of {ds.n}, identity {f[k]})",
        )
    edges = Edges(ds.sha256, identity, coverage, meta["tool"], i, j, f)
    if edges.digest != meta.get("digest"):
        raise _refuse(path, "do not match their digest")
    return edges


def stored_edges(ds: Dataset, identity=IDENTITY, coverage=COVERAGE) -> Edges | None:
    """The stored edges of ``ds`` at these parameters, verified; None when there are none."""
    identity, coverage = check_parameters(identity, coverage)
    return _load_edges(_edges_path(ds.sha256, identity, coverage), ds, identity, coverage)


def edges(ds: Dataset, identity=IDENTITY, coverage=COVERAGE) -> tuple:
    """(edges, reused): the stored edges of ``ds``, else the set searched against itself now
    (MMseqs2 easy-search) and stored."""
    identity, coverage = check_parameters(identity, coverage)
    found = stored_edges(ds, identity, coverage)
    if found is not None:
        return found, True
    from .mmseqs import search_pairs

    tool, i, j, f = search_pairs(ds.seqs, identity, coverage)
    e = Edges(ds.sha256, identity, coverage, tool, *_canonical(ds.n, i, j, f))
    _save_edges(e)
    return e, False


def _hits_digest(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def stored_hits(ds: Dataset, identity=IDENTITY, coverage=COVERAGE) -> tuple | None:
    """(mask, tool) of the stored leakage search of ``ds`` (a bool per test protein: a train
    protein above the threshold), verified; None when it was never run. Never searches."""
    identity, coverage = check_parameters(identity, coverage)
    return _hits_of(ds.sha256, ds.n_train, ds.n_test, identity, coverage)


def _hits_of(sha: str, n_train: int, n_test: int, identity: float, coverage: float):
    path = _hits_path(sha, identity, coverage)
    try:
        doc = read_home_json(path, DATASET)
    except OSError as e:
        raise KitError(f"homology hits {path} are unreadable ({e}); delete the file") from None
    if doc is None:
        return None
    try:
        hit = [int(x) for x in doc["test_with_train_hit"]]
        ok = (
            doc["digest"] == _hits_digest(doc)
            and doc["format"] == FORMAT
            and doc["dataset"] == sha
            and doc["n_train"] == n_train
            and doc["n_test"] == n_test
            and (doc["identity"], doc["coverage"]) == (identity, coverage)
            and isinstance(doc["tool"], str)
            and all(0 <= x < n_test for x in hit)
        )
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise KitError(
            f"homology hits {path} do not match their digest or dataset "
            f"{sha[:12]}; refusing them (delete the file and run `kit data homology` "
            "again)"
        )
    mask = np.zeros(n_test, dtype=bool)
    mask[hit] = True
    return mask, doc["tool"]


def stored_hits_of(
    sha: str, n_train: int, n_test: int, identity: float, coverage: float
) -> tuple | None:
    """stored_hits for a dataset known by its hash and sizes (what a store's readers hold)."""
    return _hits_of(sha, n_train, n_test, *check_parameters(identity, coverage))


def hits(ds: Dataset, identity=IDENTITY, coverage=COVERAGE) -> tuple:
    """(mask, tool, reused): the leakage search of ``ds`` (test against train), stored or run now."""
    identity, coverage = check_parameters(identity, coverage)
    found = stored_hits(ds, identity, coverage)
    if found is not None:
        return (*found, True)
    from .mmseqs import easy_search, mmseqs_path, tool_name

    hit = easy_search(ds.seqs[ds.n_train :], ds.seqs[: ds.n_train], identity, coverage)
    tool = tool_name(mmseqs_path())
    doc = {
        "format": FORMAT,
        "dataset": ds.sha256,
        "n_train": ds.n_train,
        "n_test": ds.n_test,
        "identity": identity,
        "coverage": coverage,
        "tool": tool,
        "test_with_train_hit": sorted(hit),
    }
    doc["digest"] = _hits_digest(doc)
    write_bytes(_hits_path(ds.sha256, identity, coverage), json.dumps(doc).encode())
    mask = np.zeros(ds.n_test, dtype=bool)
    mask[sorted(hit)] = True
    return mask, tool, False
