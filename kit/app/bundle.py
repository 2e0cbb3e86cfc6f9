"""Run bundles: one portable, checksummed file of runs that another machine can import.

A bundle is a gzip-compressed tar with ``MANIFEST.json`` (the sha256 and size of every other
member), ``bundle.json`` (format, origin host, the datasets' names as hints, runs with their
specs, manifests and stage hashes, and the pairs among them) and, optionally,
``arrays/BLOB.npy``, in that order. Import reads it as a stream and checks everything before it
touches the store (kit.app.bundle_checks: capped JSON, every run's fields): a member must be an
array a run refers to, its .npy header must state the dtype and shape its run recorded and its
size must be exactly that, before its body is inflated; it is then hashed as it is written to a
temporary file beside the store. Nothing a bundle could derive is taken from it: verdicts and
comparisons are computed here from the arrays, and a dataset's summary is this machine's own
(a dataset not found here is stored as unverified). Runs that claim this machine are refused.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import tempfile
import zlib
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..core.version import __version__
from ..core.atomic import atomic_path
from ..core.errors import KitError
from ..core.hosts import host
from ..core.spec import RunSpec
from ..data import load_dataset
from ..data.dataset import stored_datasets
from ..data.pipelines import known_summary
from ..envs.probes import carried
from ..runs.store import Store
from .bundle_checks import (FORMAT, NPY_HEADER, Expected, check_document, check_manifest,
                            expected_arrays, max_body, max_manifest, parse_json)

_CHUNK = 2 ** 20


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- export -----------------------------------------------------------------------------------
def plan_export(store: Store, run_ids: list, arrays: bool) -> dict:
    """What an export would write: runs, pairs among them, and the array bytes if asked."""
    runs = [store.run(r) for r in run_ids]
    ids = set(run_ids)
    pairs = [p.to_json() for p in store.pairs() if p.a in ids and p.b in ids]
    blobs, here = {}, host()["id"]
    if arrays:
        for r in runs:
            for stage, blob in store.stage_blobs(r.id).items():
                # a run imported without its arrays ships its digests alone (it has no more);
                # a missing array of a run made here is damage, refused when it is read
                if r.spec.host == here or store.blob_path(blob).exists():
                    blobs[blob] = (r.id, stage)
    size = sum(store.blob_path(b).stat().st_size for b in blobs if store.blob_path(b).exists())
    return {"runs": runs, "pairs": pairs, "blobs": blobs, "array_bytes": size}


def export(store: Store, run_ids: list, out, arrays: bool = False) -> dict:
    """Write the bundle to ``out`` atomically; returns a summary with its sha256.

    Every array is verified as it is read for the bundle: damage is refused, never shipped.
    """
    if not run_ids:
        raise KitError("nothing to export: no runs selected")
    p = plan_export(store, run_ids, arrays)
    datasets = store.datasets()
    # runs and what they are made of, never what kit derives from them (verdicts, comparisons):
    # the importer computes those itself
    runs = [{**r.to_json(), "blobs": store.stage_blobs(r.id)} for r in p["runs"]]
    doc = {"format": FORMAT, "kit": __version__, "host": host(),
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "arrays": arrays, "runs": runs, "pairs": p["pairs"],
           "probes": carried(r.spec.stack for r in p["runs"]),  # what each probe is, no lock
           # hints to find each dataset on the other machine; it is never stored from here
           "datasets": {r.spec.dataset: datasets.get(r.spec.dataset, {}) for r in p["runs"]}}
    body = json.dumps(doc, sort_keys=True).encode()
    members = {"bundle.json": body}
    for blob, (run, stage) in p["blobs"].items():
        buf = io.BytesIO()
        np.save(buf, store.array(run, stage), allow_pickle=False)  # verified as it is read
        members[f"arrays/{blob}.npy"] = buf.getvalue()
    manifest = {name: {"sha256": _sha(data), "size": len(data)} for name, data in members.items()}
    with atomic_path(out) as tmp:
        with tarfile.open(tmp, "w:gz") as tar:
            _add(tar, "MANIFEST.json", json.dumps(manifest, sort_keys=True).encode())
            for name, data in members.items():
                _add(tar, name, data)
    out = Path(out)
    return {"file": str(out), "runs": len(p["runs"]), "pairs": len(p["pairs"]),
            "arrays": len(p["blobs"]), "bytes": out.stat().st_size,
            "sha256": _sha(out.read_bytes())}


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0  # reproducible members
    tar.addfile(info, io.BytesIO(data))


# -- read -------------------------------------------------------------------------------------
class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to yield more than ``limit`` bytes (a gzip bomb)."""

    def __init__(self, raw, limit: int):
        self.raw, self.limit, self.read_so_far = raw, limit, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self.raw.readinto(b)
        self.read_so_far += n or 0
        if self.read_so_far > self.limit:
            raise KitError(f"the bundle expands beyond the {self.limit / 2**20:.0f} MiB its runs "
                           "account for; refusing it")
        return n


@contextmanager
def opened(path, spool=None):
    """Open and verify a bundle; yields (document, {blob: verified .npy file}). The files lie
    in a temporary folder under ``spool`` (the store's folder: moved in from there) that is
    removed afterwards; nothing else is touched."""
    path = Path(path)
    if not path.exists():
        raise KitError(f"no bundle at {path}")
    if not path.is_file():
        raise KitError(f"{path} is not a file")
    with tempfile.TemporaryDirectory(dir=spool, prefix=".bundle-") as tmp:
        try:
            with gzip.open(path, "rb") as gz:
                found = _read(path, _Bounded(gz, max_manifest() + max_body() + 2 ** 20), Path(tmp))
        except (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as e:
            raise KitError(f"{path} is damaged, cut short or not a kit bundle ({e}); copy it "
                           "again") from e
        except OSError as e:
            raise KitError(f"cannot read {path}: {e.strerror or e}") from e
        yield found


def read(path) -> dict:
    """Verify a bundle as import would (arrays included); returns its document."""
    with opened(path) as (doc, _files):
        return doc


def _read(path: Path, stream: _Bounded, tmp: Path) -> tuple:
    with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tar:
        members = iter(tar)
        raw = _member(tar, next(members, None), "MANIFEST.json", path, max_manifest())
        manifest = check_manifest(parse_json(raw, "MANIFEST.json", path), path)
        body = _member(tar, next(members, None), "bundle.json", path, max_body())
        _check_sum(manifest, "bundle.json", hashlib.sha256(body).hexdigest(), len(body), path)
        doc = check_document(parse_json(body, "bundle.json", path), path)
        del body, raw
        expected = expected_arrays(doc, path)
        unknown = set(manifest) - {"bundle.json"} - set(expected)
        if unknown:
            raise KitError(f"{path}: member {sorted(unknown)[0]!r} is not an array of its runs; "
                           "refusing the bundle")
        # from here on the stream may hold the runs' arrays and nothing more
        stream.limit = stream.read_so_far + sum(NPY_HEADER + e.nbytes for e in expected.values()) \
            + 2 ** 20 * (1 + len(expected))
        files = {}
        for m in members:
            name = m.name
            if name not in expected or name not in manifest or name[7:-4] in files:
                raise KitError(f"{path}: refusing member {name!r} (not an array of its runs)")
            files[name[7:-4]] = _spool(tar, m, expected[name], manifest[name], tmp, path)
    missing = set(manifest) - {"bundle.json"} - {f"arrays/{b}.npy" for b in files}
    if missing:
        raise KitError(f"{path}: cut short: {len(missing)} array(s) listed in MANIFEST.json are absent")
    return doc, files


def _member(tar, m, name, path, bound) -> bytes:
    if m is None:
        raise KitError(f"{path}: not a kit bundle ({name} missing)")
    if m.name != name or not m.isfile():
        raise KitError(f"{path}: refusing member {m.name!r} (expected {name})")
    if m.size > bound:
        raise KitError(f"{path}: member {name} is {m.size / 2**20:,.1f} MiB, above the "
                       f"{bound / 2**20:,.0f} MiB cap (KIT_BUNDLE_MAX_JSON_MIB raises it); "
                       "refusing the bundle")
    data = tar.extractfile(m).read()
    if len(data) != m.size:
        raise KitError(f"{path}: member {name!r} is cut short")
    return data


def _check_sum(manifest, name, sha, size, path):
    entry = manifest.get(name)
    if entry is None or entry["sha256"] != sha or entry["size"] != size:
        raise KitError(f"{path}: checksum mismatch for {name}; the bundle is damaged")


def _npy_header(head: bytes) -> tuple:
    """(header length, shape, fortran order, dtype string) of a .npy prefix, or ValueError."""
    fmt = np.lib.format
    fp = io.BytesIO(head)
    try:
        version = fmt.read_magic(fp)
        reader = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}[version]
        shape, fortran, dtype = reader(fp, max_header_size=NPY_HEADER)
    except Exception as e:  # noqa: BLE001 -- numpy's header parser raises many kinds on junk
        raise ValueError(f"not a readable .npy header ({type(e).__name__})") from None
    return fp.tell(), tuple(shape), bool(fortran), dtype.str


def _spool(tar, m, exp: Expected, entry: dict, tmp: Path, path) -> Path:
    """Check a member's size and .npy header against its run, then hash it into a file."""
    where = f"{path}: run {exp.run[:12]} stage {exp.stage} ({m.name})"
    if not m.isfile() or m.size > NPY_HEADER + exp.nbytes:
        raise KitError(f"{where}: the member is {m.size:,} bytes; at most "
                       f"{NPY_HEADER + exp.nbytes:,} fit what its run recorded")
    src = tar.extractfile(m)
    head = src.read(min(m.size, NPY_HEADER))
    try:
        hlen, shape, fortran, dtype = _npy_header(head)
    except ValueError as e:
        raise KitError(f"{where}: is not the array its run recorded ({e})") from None
    why = (f"dtype {dtype}, recorded {exp.dtype}" if dtype != exp.dtype else
           f"shape {list(shape)}, recorded {list(exp.shape)}" if shape != exp.shape else
           "Fortran order, recorded C order" if fortran else None)
    if why:
        raise KitError(f"{where}: is not the array its run recorded ({why})")
    if m.size != hlen + exp.nbytes:
        raise KitError(f"{where}: the member is {m.size:,} bytes; its header and the run's dtype "
                       f"and shape make {hlen + exp.nbytes:,}")
    whole, body = hashlib.sha256(head), hashlib.sha256(head[hlen:])
    out, size = tmp / f"{m.name[7:]}", len(head)
    with open(out, "wb") as f:
        f.write(head)
        while chunk := src.read(_CHUNK):
            whole.update(chunk)
            body.update(chunk)
            f.write(chunk)
            size += len(chunk)
    if size != m.size:
        raise KitError(f"{where}: the member is cut short")
    _check_sum({m.name: entry}, m.name, whole.hexdigest(), size, path)
    if body.hexdigest() != exp.sha256:  # C-order bytes after the header: the stage hash
        raise KitError(f"{where}: is not the array its run recorded (bytes do not match the "
                       "recorded sha256)")
    return out


# -- import -----------------------------------------------------------------------------------
def local_dataset(hint: dict, sha: str):
    """The dataset with this sha256 on this machine, found by the bundle's hint (its name and
    size), else among the datasets stored here; None when it is not here. The hint is only a
    place to look: the sha256 decides."""
    hint = hint if isinstance(hint, dict) else {}
    name, rows = str(hint.get("name") or ""), hint.get("rows")
    rows = rows if type(rows) is int and rows > 0 else None
    try:
        if hint.get("source") == "synthetic" and rows:
            ds = load_dataset("synthetic", rows)
        else:
            ds = load_dataset(name.split("[:")[0])
            ds = ds.head(rows) if rows and rows != ds.n else ds
    except KitError:
        ds = None
    if ds is not None and ds.sha256 == sha:
        return ds
    for stored in stored_datasets():  # a forged or stale hint: the files here decide
        try:
            ds = load_dataset(stored)
        except KitError:
            continue
        if ds.sha256 == sha:
            return ds
    return None


def unverified(sha: str) -> dict:
    """What the store records of a bundle's dataset that is not on this machine."""
    return {"sha256": sha, "name": f"{sha[:12]} (a bundle's; not on this machine, unverified)",
            "verified": False}


def import_bundle(store: Store, path, found=None) -> dict:
    """Merge a verified bundle into the store (idempotent); returns what was added.

    ``found`` is what ``opened(path, store.root)`` yielded (kit compare has opened it already).
    A run that says it was made on this machine is refused unless it is already here: this
    machine's runs are its own, never a bundle's. The bundle's verdicts (old bundles carry
    them) and dataset summaries are never stored.
    """
    if found is None:
        with opened(path, store.root) as found:
            return import_bundle(store, path, found)
    doc, files = found
    here = host()["id"]
    before = set(store.specs())
    for r in doc["runs"]:
        if RunSpec.from_dict(r["spec"]).host == here and r["id"] not in before:
            raise KitError(f"{path}: run {r['id'][:12]} claims to have been made on this machine "
                           "(this KIT_HOME's host id) but is not here; refusing the bundle")
    datasets = {}
    for sha in dict.fromkeys(r["spec"]["dataset"] for r in doc["runs"]):
        ds = local_dataset(doc["datasets"].get(sha), sha)
        datasets[sha] = ds.summary() if ds else known_summary(sha) or unverified(sha)
    store.import_runs(doc["runs"], doc["pairs"], files, datasets)
    added = [r["id"] for r in doc["runs"] if r["id"] not in before]
    return {"runs": len(doc["runs"]), "added": len(added), "pairs": len(doc["pairs"]),
            "arrays": len(files), "host": doc["host"], "created": doc["created"],
            "unverified": sorted(h for h, s in datasets.items() if s.get("verified") is False)}
