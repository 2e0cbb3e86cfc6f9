"""A dataset: sequences, labels and organisms in split order, a fixed train/test cut, a hash."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.atomic import atomic_path, write_bytes
from ..core.errors import KitError
from ..core.paths import subdir
from ..core.small_files import DATASET, NotKits, read_home, read_home_json
from ..worker.names import unknown
from .strings import Strings

TEST_FRACTION = 0.333  # the paper's 1,998 test proteins of 6,000
MIN_LEN, MAX_LEN = 60, 700
SPLIT_SEED = 20261005
SYNTHETIC = "synthetic"
SYNTHETIC_N = 6000
# a first look (the TUI, bootstrap's smoke audit): the smallest size at which all four models
# learn on the built-in set in every seed (at 600 the MLP predicts one class for every protein)
FIRST_LOOK_N = 1000
MAX_SYNTHETIC_N = 200_000  # 20 s to generate; beyond it a typo (--n 10^9) would generate for hours


@dataclass(frozen=True)
class Dataset:
    """Records in split order: the first ``n_train`` train, the rest test."""

    name: str
    source: str
    ids: Strings  # str rows, compact: equal to a tuple of the same strings
    seqs: Strings
    labels: tuple
    organisms: tuple
    n_train: int
    split_seed: int | None  # None: the file's own order was kept (--no-shuffle)
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def n(self) -> int:
        return len(self.seqs)

    @property
    def n_test(self) -> int:
        return self.n - self.n_train

    @property
    def sha256(self) -> str:
        """Identity of what the pipeline sees: records, their order and the cut."""
        h = hashlib.sha256()
        for part in _json_list([self.ids, self.seqs, self.labels, self.organisms, self.n_train]):
            h.update(part.encode())
        return h.hexdigest()

    @property
    def synthetic(self) -> bool:
        return self.source == SYNTHETIC

    def summary(self) -> dict:
        lengths = np.fromiter(map(len, self.seqs), dtype=np.int64, count=self.n)
        labels = np.asarray(self.labels)
        return {
            "name": self.name,
            "source": self.source,
            "synthetic": self.synthetic,
            "rows": self.n,
            "train": self.n_train,
            "test": self.n_test,
            "positives": int(labels.sum()),
            "test_positives": int(labels[self.n_train :].sum()),
            "label_rate": float(labels.mean()) if self.n else 0.0,
            "mean_length": float(lengths.mean()) if self.n else 0.0,
            "organisms": len(set(self.organisms)),
            "split_seed": self.split_seed,
            "sha256": self.sha256,
            # a split's removed ids stay in its file, not in every summary of it
            **{k: v for k, v in self.meta.items() if k != "removed_ids"},
        }

    def head(self, n: int) -> Dataset:
        """The first n records of the split order, re-cut: the paper's 'first 6,000 of a shuffled pool'."""
        if not 0 < n <= self.n:
            raise KitError(
                f"--n {n:,}: dataset {self.name!r} holds {self.n:,} proteins, so --n "
                f"is at most {self.n:,} (an imported dataset's bound is its size)"
            )
        if n == self.n:
            return self
        if self.meta.get("split") == "homology":  # its first n: train alone, re-cut 2:1
            raise KitError(
                f"dataset {self.name!r} is a homology-disjoint split, its first {n} not: use "
                f"it whole, or kit data split {self.meta.get('source_name')} --n {n} ..."
            )
        sl = slice(0, n)
        return Dataset(
            f"{self.name}[:{n}]",
            self.source,
            self.ids[sl],
            self.seqs[sl],
            self.labels[sl],
            self.organisms[sl],
            n_train_for(n),
            self.split_seed,
            dict(self.meta),
        )


def n_train_for(n: int) -> int:
    return n - int(n * TEST_FRACTION)


def make_dataset(
    name, source, ids, seqs, labels, organisms, split_seed=SPLIT_SEED, shuffle=True, meta=None
) -> Dataset:
    """Shuffle with the split seed (a dataset property, never a training seed) and cut 2:1."""
    order = split_order(name, len(seqs), split_seed, shuffle)
    pick = lambda xs: tuple(xs[i] for i in order)  # noqa: E731
    return Dataset(
        name,
        source,
        Strings(pick(list(ids))),
        Strings(pick(list(seqs))),
        pick([int(v) for v in labels]),
        pick(list(organisms)),
        n_train_for(len(seqs)),
        split_seed if shuffle else None,
        dict(meta or {}),
    )


def split_order(name, n: int, split_seed=SPLIT_SEED, shuffle=True):
    """The file positions of a dataset's records in split order (the split seed's permutation)."""
    if n < 3:
        raise KitError(f"dataset {name!r} needs at least 3 records, got {n}")
    return np.random.default_rng(split_seed).permutation(n) if shuffle else np.arange(n)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED = ("synthetic", "swissprot")  # made by kit itself: a user's file never replaces them


def _well_formed(name: str) -> str:
    """``name`` if a dataset may have it, else the one line that says which names may be (every
    name typed is held to it: `kit data info ""` said "invalid dataset name ''", import this)."""
    if not _NAME.match(name or ""):
        raise KitError(
            f"dataset name {name[:70]!r}: use letters, digits, '.', '_' and '-' (at most "
            "64, starting with a letter or digit)"
        )
    return name


def check_name(name: str) -> str:
    """A name a user may give an imported dataset, or a one-line KitError saying why not."""
    _well_formed(name)
    if name in RESERVED or name.startswith("synthetic-"):
        raise KitError(
            f"the name {name!r} is reserved for kit's own datasets (synthetic, "
            "swissprot); choose another --name"
        )
    return name


def _path(name: str) -> Path:
    return subdir("datasets") / f"{_well_formed(name)}.json"


def find_stored(name: str) -> str | None:
    """The sha256 a stored dataset file records (None when there is none by that name)."""
    try:
        doc = read_home_json(_path(name), DATASET)
        return None if doc is None else doc["sha256"]
    except (NotKits, OSError, KeyError, TypeError):
        return "unreadable"


def _json(v, step: int = 65536):
    """``json.dumps(v, separators=(",", ":"))`` in pieces, the same text: a column of a large
    dataset is encoded ``step`` items at a time, never as one copy of the whole."""
    if not isinstance(v, (list, tuple, Strings)) or not len(v):
        yield json.dumps(list(v) if isinstance(v, Strings) else v, separators=(",", ":"))
        return
    for i in range(0, len(v), step):
        yield ("," if i else "[") + json.dumps(list(v[i : i + step]), separators=(",", ":"))[1:-1]
    yield "]"


def _json_list(values):
    yield "["
    for n, v in enumerate(values):
        yield from ([","] if n else [])
        yield from _json(v)
    yield "]"


def _json_doc(doc: dict):
    """``json.dumps(doc, separators=(",", ":"))`` in pieces, the same text."""
    for n, (key, value) in enumerate(doc.items()):
        yield ("," if n else "{") + json.dumps(key) + ":"
        yield from _json(value)
    yield "}"


def save_dataset(ds: Dataset) -> Path:
    doc = {
        "name": ds.name,
        "source": ds.source,
        "split_seed": ds.split_seed,
        "n_train": ds.n_train,
        "meta": ds.meta,
        "sha256": ds.sha256,
        "ids": ds.ids,
        "seqs": ds.seqs,
        "labels": ds.labels,
        "organisms": ds.organisms,
    }
    path = _path(ds.name)
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            for part in _json_doc(doc):
                f.write(part.encode())
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise KitError(f"cannot write {path}: {e.strerror or e}; nothing was changed") from None
    return path


_read_cache: dict = {}  # path -> (file identity, Dataset): a file is parsed and hashed once


def _read(path: Path) -> Dataset:
    ident = _file_ident(path)
    hit = _read_cache.get(path)
    if hit and ident is not None and hit[0] == ident:
        return hit[1]
    ds = read_dataset_file(path)
    _read_cache[path] = (ident, ds)
    return ds


def read_dataset_file(path: Path) -> Dataset:
    try:
        doc = read_home_json(path, DATASET)
        if doc is None:
            raise KitError(f"dataset file {path} vanished while it was read; run the command again")
        ds = Dataset(
            doc["name"],
            doc["source"],
            Strings(doc["ids"]),
            Strings(doc["seqs"]),
            tuple(doc["labels"]),
            tuple(doc["organisms"]),
            doc["n_train"],
            doc["split_seed"],
            doc.get("meta", {}),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise KitError(f"dataset file {path} is unreadable ({e}); delete it and recreate it") from e
    if ds.sha256 != doc["sha256"]:
        raise KitError(
            f"dataset file {path} does not match its recorded sha256; refusing to use it"
        )
    return ds


def load_dataset(
    name: str = SYNTHETIC, n: int | None = None, generate: bool = True, save: bool = True
) -> Dataset:
    """A stored dataset by name; ``synthetic`` at the asked size is made if ``generate``, kept if ``save``."""
    known = lambda: ", ".join(stored_datasets()) or "none yet"  # noqa: E731
    if name == SYNTHETIC:
        size = SYNTHETIC_N if n is None else n
        if size < 100:
            raise KitError("--n must be at least 100 for the synthetic set (64 SVD components)")
        if size > MAX_SYNTHETIC_N:
            raise KitError(
                f"--n {size:,}: the synthetic set is generated up to {MAX_SYNTHETIC_N:,} "
                "proteins (an imported dataset: up to its size)"
            )
        path = _path(f"{SYNTHETIC}-{size}")
        if path.exists():
            return _read(path)
        if not generate:
            raise KitError(
                f"no dataset synthetic at --n {size} (stored: {known()}); `kit run "
                f"--factor repeat --dataset synthetic --n {size}` makes it"
            )
        from .synthetic import SEED
        from .synthetic import generate as _generate

        ids, seqs, labels, orgs = _generate(size)
        ds = make_dataset(
            f"{SYNTHETIC}-{size}", SYNTHETIC, ids, seqs, labels, orgs, meta={"generator_seed": SEED}
        )
        if save:
            save_dataset(ds)
        return ds
    path = _path(name)
    if not path.exists():
        # the paper's Swiss-Prot subset is kit's own to make: fetched, never imported
        how = (
            "`kit data fetch` downloads it from UniProt (the paper's subset); offline, use "
            "'synthetic'"
            if name == RESERVED[1]
            else "use 'synthetic' or 'kit data import'"
        )
        raise KitError(
            unknown(
                "no dataset", name, [SYNTHETIC, *stored_datasets()], f" (stored: {known()}); {how}"
            )
        )
    ds = _read(path)
    return ds if n is None else ds.head(n)


def stored_datasets() -> list:
    return sorted(p.stem for p in subdir("datasets").glob("*.json"))


def _worker_doc(ds: Dataset) -> bytes:
    """What a worker reads: the records in split order and the cut, with the dataset's hash
    (ids and organisms too, so that the file can be re-hashed on its own)."""
    return "".join(
        _json_doc(
            {
                "sha256": ds.sha256,
                "ids": ds.ids,
                "seqs": ds.seqs,
                "labels": ds.labels,
                "organisms": ds.organisms,
                "n_train": ds.n_train,
            }
        )
    ).encode()


_checked: dict = {}  # path -> the file identity verified in this process


def dataset_path(ds: Dataset) -> Path:
    """The file a worker reads, verified to hold exactly ``ds`` (rewritten if it does not).

    An edited file would change every later run's results under the original hash, so its
    bytes are compared with the dataset's before each plan, and once per change of the file.
    """
    path = subdir("datasets") / "by-hash" / f"{ds.sha256}.json"
    ident = _file_ident(path)
    if ident is not None and _checked.get(path) == ident:
        return path
    want = _worker_doc(ds)
    try:  # a link or a FIFO planted there is replaced, never read through
        same = read_home(path, DATASET) == want
    except (NotKits, OSError):
        same = False
    if not same:
        write_bytes(path, want)
    _checked[path] = _file_ident(path)
    return path


def _file_ident(path: Path):
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stored_worker_file(sha256: str) -> Path | None:
    """The file a worker reads for dataset ``sha256`` if this machine holds it intact (verified
    once per change of the file), else None: a cluster node is sent a dataset only once."""
    path = subdir("datasets") / "by-hash" / f"{sha256}.json"
    ident = _file_ident(path) if re.fullmatch(r"[0-9a-f]{64}", sha256) else None
    if ident is None or _checked.get(path) != ident and verify_worker_file(path):
        return None
    _checked[path] = ident
    return path


def verify_worker_file(path: Path) -> str | None:
    """Why a worker's dataset file does not hold the dataset its name says (None: it does)."""
    try:
        doc = read_home_json(path, DATASET)
        ds = Dataset(
            "check",
            "check",
            Strings(doc["ids"]),
            Strings(doc["seqs"]),
            tuple(doc["labels"]),
            tuple(doc["organisms"]),
            doc["n_train"],
            None,
        )
    except NotKits as e:
        return e.why
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable ({type(e).__name__})"
    if ds.sha256 != path.stem or doc.get("sha256") != path.stem:
        return "its records do not hash to its name"
    return None


def verify_worker_files() -> int:
    """Re-hash every dataset file workers read; KitError naming the damaged ones. Returns how
    many were checked."""
    files = sorted((subdir("datasets") / "by-hash").glob("*.json"))
    bad = [f"{p.stem[:12]} ({why})" for p in files if (why := verify_worker_file(p))]
    if bad:
        raise KitError(
            f"dataset file(s) that runs read are damaged: {', '.join(bad)}; `kit store "
            "check --repair` removes them (rewritten from the dataset before a run)"
        )
    return len(files)
