"""Run bundles: one portable, checksummed file of runs that another machine can import.

A bundle is a gzip-compressed tar with ``MANIFEST.json`` (the sha256 and size of every other
member), ``bundle.json`` (format, origin host, datasets, runs with their specs, manifests,
stage hashes and verdicts, and the pairs among them) and, optionally, ``arrays/BLOB.npy``, in
that order. Import reads it as a stream and checks everything before it touches the store: a
member is read only up to the size its run's dtype and shape allow, must be an array a run
refers to, and must hash to what that run recorded; runs that claim to have been made on this
machine are refused.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..core.version import __version__
from ..core.atomic import atomic_path
from ..runs.store.blobs import DamagedArray, check_array, load_npy
from ..core.errors import KitError
from ..core.hosts import host
from ..core.spec import RunSpec
from ..runs.store import Store
from ..analysis.verdicts import has_verdicts, run_verdicts

FORMAT = "kit-bundle/1"
MAX_DOC = 256 * 2 ** 20      # MANIFEST.json and bundle.json: far more than any real store
NPY_HEADER = 4096            # a .npy header is at most this long
_BLOB = re.compile(r"^arrays/([0-9a-f]{64})\.npy$")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- export -----------------------------------------------------------------------------------
def plan_export(store: Store, run_ids: list, arrays: bool) -> dict:
    """What an export would write: runs, pairs among them, and the array bytes if asked."""
    runs = [store.run(r) for r in run_ids]
    ids = set(run_ids)
    pairs = [p.to_json() for p in store.pairs() if p.a in ids and p.b in ids]
    blobs = {}
    if arrays:
        for r in runs:
            for stage, blob in store.stage_blobs(r.id).items():
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
    runs = [{**r.to_json(),  # verdicts travel with their runs (computed once, here if not yet)
             "verdicts": run_verdicts(store, r.id) if has_verdicts(r.spec) else None,
             "blobs": store.stage_blobs(r.id)} for r in p["runs"]]
    doc = {"format": FORMAT, "kit": __version__, "host": host(),
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "arrays": arrays, "runs": runs, "pairs": p["pairs"],
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


def read(path) -> tuple:
    """Open and verify a bundle; returns (bundle document, {blob: bytes}). Touches nothing."""
    path = Path(path)
    if not path.exists():
        raise KitError(f"no bundle at {path}")
    if not path.is_file():
        raise KitError(f"{path} is not a file")
    try:
        with gzip.open(path, "rb") as gz:
            return _read(path, _Bounded(gz, 2 * MAX_DOC))
    except (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as e:
        raise KitError(f"{path} is damaged, cut short or not a kit bundle ({e}); copy it again") from e
    except OSError as e:
        raise KitError(f"cannot read {path}: {e.strerror or e}") from e


def _read(path: Path, stream: _Bounded) -> tuple:
    with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tar:
        members = iter(tar)
        manifest = _json_member(tar, next(members, None), "MANIFEST.json", path)
        body_member = next(members, None)
        body = _member(tar, body_member, "bundle.json", path, MAX_DOC)
        _check_sum(manifest, "bundle.json", body, path)
        doc = _document(body, path)
        expected = _expected_arrays(doc, path)
        unknown = set(manifest) - {"bundle.json"} - set(expected)
        if unknown:
            raise KitError(f"{path}: member {sorted(unknown)[0]!r} is not an array of its runs; "
                           "refusing the bundle")
        # from here on the stream may hold the runs' arrays and nothing more
        stream.limit = stream.read_so_far + sum(s for *_, s in expected.values()) + 2 ** 20 * (
            1 + len(expected))
        blobs = {}
        for m in members:
            name = m.name
            if name not in expected or name not in manifest or name[7:-4] in blobs:
                raise KitError(f"{path}: refusing member {name!r} (not an array of its runs)")
            sha, dtype, shape, bound = expected[name]
            data = _member(tar, m, name, path, bound)
            _check_sum(manifest, name, data, path)
            try:
                why = check_array(load_npy(data), sha, dtype, shape)
            except DamagedArray as e:
                why = str(e)
            if why:
                raise KitError(f"{path}: {name} is not the array its run recorded ({why})")
            blobs[name[7:-4]] = data
    missing = set(manifest) - {"bundle.json"} - {f"arrays/{b}.npy" for b in blobs}
    if missing:
        raise KitError(f"{path}: cut short: {len(missing)} array(s) listed in MANIFEST.json are absent")
    return doc, blobs


def _member(tar, m, name, path, bound) -> bytes:
    if m is None:
        raise KitError(f"{path}: not a kit bundle ({name} missing)")
    if m.name != name or not m.isfile():
        raise KitError(f"{path}: refusing member {m.name!r} (expected {name})")
    if m.size > bound:
        raise KitError(f"{path}: member {name!r} is {m.size} bytes; at most {bound} fit what its "
                       "run recorded")
    data = tar.extractfile(m).read()
    if len(data) != m.size:
        raise KitError(f"{path}: member {name!r} is cut short")
    return data


def _json_member(tar, m, name, path):
    try:
        return json.loads(_member(tar, m, name, path, MAX_DOC))
    except ValueError:
        raise KitError(f"{path}: {name} is not JSON") from None


def _check_sum(manifest, name, data, path):
    entry = manifest.get(name) if isinstance(manifest, dict) else None
    if not isinstance(entry, dict) or entry.get("sha256") != _sha(data) or entry.get("size") != len(data):
        raise KitError(f"{path}: checksum mismatch for {name}; the bundle is damaged")


def _document(body: bytes, path) -> dict:
    """bundle.json, with every field import relies on checked (a one-line error otherwise)."""
    try:
        doc = json.loads(body)
        if doc.get("format") != FORMAT:
            raise KitError(f"{path}: unknown bundle format {doc.get('format')!r}")
        assert isinstance(doc["host"]["id"], str) and isinstance(doc["host"]["name"], str)
        assert isinstance(doc["runs"], list) and isinstance(doc["pairs"], list)
        assert isinstance(doc["datasets"], dict) and isinstance(doc["created"], str)
        for r in doc["runs"]:
            assert isinstance(r["id"], str) and isinstance(r["manifest"], dict)
            assert isinstance(r["stages"], dict) and isinstance(r["blobs"], dict)
            assert isinstance(r["created"], str)
            for st, i in r["stages"].items():
                assert isinstance(i["sha256"], str) and isinstance(i["dtype"], str)
                assert all(isinstance(x, int) and x >= 0 for x in i["shape"])
                assert isinstance(r["blobs"][st], str)
        for p in doc["pairs"]:
            assert all(isinstance(p[k], str) for k in ("factor", "level", "a", "b", "label"))
    except KitError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, AssertionError):
        raise KitError(f"{path}: bundle.json is malformed") from None
    _check_runs(doc, path)
    return doc


def _expected_arrays(doc, path) -> dict:
    """{member name: (sha256, dtype, shape, largest size)} of every array the runs refer to."""
    from ..runs.store.blobs import blob_key

    out = {}
    for r in doc["runs"]:
        for stage, info in r["stages"].items():
            blob = r["blobs"][stage]
            try:
                itemsize = np.dtype(info["dtype"]).itemsize
            except TypeError:
                raise KitError(f"{path}: run {r['id'][:12]} stage {stage} has an unknown dtype") from None
            if blob != blob_key(info["sha256"], info["dtype"], info["shape"]):
                raise KitError(f"{path}: run {r['id'][:12]} stage {stage}: its array's key does not "
                               "match its hash, dtype and shape")
            nbytes = itemsize * int(np.prod(info["shape"], dtype=np.int64))
            out[f"arrays/{blob}.npy"] = (info["sha256"], info["dtype"], info["shape"],
                                         NPY_HEADER + nbytes)
    return out


def _check_runs(doc, path):
    for r in doc["runs"]:
        try:
            spec = RunSpec.from_json(json.dumps(r["spec"]))
        except (TypeError, ValueError, KeyError) as e:
            raise KitError(f"{path}: run {str(r.get('id'))[:12]} has a malformed spec ({e})") from e
        if spec.run_id != r["id"]:
            raise KitError(f"{path}: run {r['id'][:12]}'s id does not match its spec")


def import_bundle(store: Store, path, doc=None, blobs=None) -> dict:
    """Merge a verified bundle into the store (idempotent); returns what was added.

    A run that says it was made on this machine is refused unless it is already here: this
    machine's runs are its own, never a bundle's.
    """
    if doc is None:
        doc, blobs = read(path)
    here = host()["id"]
    before = set(store.specs())
    for r in doc["runs"]:
        if RunSpec.from_dict(r["spec"]).host == here and r["id"] not in before:
            raise KitError(f"{path}: run {r['id'][:12]} claims to have been made on this machine "
                           "(this KIT_HOME's host id) but is not here; refusing the bundle")
    store.import_runs(doc["runs"], doc["pairs"], blobs, doc["datasets"])
    added = [r["id"] for r in doc["runs"] if r["id"] not in before]
    return {"runs": len(doc["runs"]), "added": len(added), "pairs": len(doc["pairs"]),
            "arrays": len(blobs), "host": doc["host"], "created": doc["created"]}
