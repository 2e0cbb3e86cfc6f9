"""Run bundles: one portable, checksummed file of runs that another machine can import.

A bundle is a gzip-compressed tar with ``bundle.json`` (format, origin host, datasets, runs with
their specs, manifests, stage hashes and verdicts, and the pairs among them), ``MANIFEST.json``
(the sha256 and size of every other member) and, optionally, ``arrays/BLOB.npy``. Import checks
everything before it touches the store, then adds it in one transaction.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from . import __version__
from .errors import KitError
from .hosts import host
from .store import Store, array_sha256
from .verdicts import has_verdicts, run_verdicts

FORMAT = "kit-bundle/1"
MAX_MEMBER = 2 * 2 ** 30        # an array larger than 2 GiB is not one of ours
MAX_TOTAL = 8 * 2 ** 30
_BLOB = re.compile(r"^arrays/[0-9a-f]{64}\.npy$")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plan_export(store: Store, run_ids: list, arrays: bool) -> dict:
    """What an export would write: runs, pairs among them, and the array bytes if asked."""
    runs = [store.run(r) for r in run_ids]
    ids = set(run_ids)
    pairs = [p for p in store.pairs() if p["a"] in ids and p["b"] in ids]
    blobs = {}
    if arrays:
        for r in run_ids:
            for stage, blob in store.blobs(r).items():
                blobs[blob] = store.blob_path(blob)
    size = sum(p.stat().st_size for p in blobs.values())
    return {"runs": runs, "pairs": pairs, "blobs": blobs, "array_bytes": size}


def export(store: Store, run_ids: list, out, arrays: bool = False) -> dict:
    """Write the bundle to ``out`` atomically; returns a summary with its sha256."""
    if not run_ids:
        raise KitError("nothing to export: no runs selected")
    p = plan_export(store, run_ids, arrays)
    datasets = store.datasets()
    for r in p["runs"]:  # verdicts travel with their runs (computed once, here if not yet)
        r["verdicts"] = run_verdicts(store, r["id"]) if has_verdicts(r["spec"]) else None
        r["blobs"] = store.blobs(r["id"])
    doc = {"format": FORMAT, "kit": __version__, "host": host(),
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "arrays": arrays, "runs": p["runs"], "pairs": p["pairs"],
           "datasets": {r["spec"]["dataset"]: datasets.get(r["spec"]["dataset"], {})
                        for r in p["runs"]}}
    body = json.dumps(doc, sort_keys=True).encode()
    members = {"bundle.json": body}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        manifest = {"bundle.json": {"sha256": _sha(body), "size": len(body)}}
        for blob, path in p["blobs"].items():
            data = path.read_bytes()
            manifest[f"arrays/{blob}.npy"] = {"sha256": _sha(data), "size": len(data)}
        mbytes = json.dumps(manifest, sort_keys=True).encode()
        with tarfile.open(tmp, "w:gz") as tar:
            for name, data in [("MANIFEST.json", mbytes), *members.items()]:
                _add(tar, name, data)
            for blob, path in p["blobs"].items():
                _add(tar, f"arrays/{blob}.npy", path.read_bytes())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"file": str(out), "runs": len(p["runs"]), "pairs": len(p["pairs"]),
            "arrays": len(p["blobs"]), "bytes": out.stat().st_size,
            "sha256": _sha(out.read_bytes())}


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0  # reproducible members
    tar.addfile(info, io.BytesIO(data))


def read(path) -> tuple:
    """Open and verify a bundle; returns (bundle document, {blob: bytes}). Touches nothing."""
    path = Path(path)
    if not path.is_file():
        raise KitError(f"no bundle at {path}" if not path.exists() else f"{path} is not a file")
    try:
        return _read(path)
    except (EOFError, zlib.error, tarfile.TarError) as e:
        raise KitError(f"{path} is damaged or cut short ({e}); copy the bundle again") from e


def _read(path: Path) -> tuple:
    try:
        tar = tarfile.open(path, "r:gz")
    except (OSError, tarfile.TarError) as e:
        raise KitError(f"{path} is not a kit bundle (not a gzip tar: {e})") from e
    with tar:
        members = {}
        total = 0
        for m in tar.getmembers():
            name = m.name
            if (not m.isfile() or name.startswith("/") or ".." in Path(name).parts
                    or not (name in ("MANIFEST.json", "bundle.json") or _BLOB.match(name))):
                raise KitError(f"{path}: refusing member {name!r} (not a plain bundle file)")
            if m.size > MAX_MEMBER or total + m.size > MAX_TOTAL:
                raise KitError(f"{path}: member {name!r} is too large ({m.size} bytes)")
            total += m.size
            members[name] = tar.extractfile(m).read()
    if "MANIFEST.json" not in members or "bundle.json" not in members:
        raise KitError(f"{path}: not a kit bundle (MANIFEST.json or bundle.json missing)")
    try:
        manifest = json.loads(members.pop("MANIFEST.json"))
    except ValueError as e:
        raise KitError(f"{path}: MANIFEST.json is not JSON") from e
    if set(manifest) != set(members):
        raise KitError(f"{path}: members and MANIFEST.json disagree")
    for name, data in members.items():
        if _sha(data) != manifest[name]["sha256"] or len(data) != manifest[name]["size"]:
            raise KitError(f"{path}: checksum mismatch for {name}; the bundle is damaged")
    doc = json.loads(members.pop("bundle.json"))
    if doc.get("format") != FORMAT:
        raise KitError(f"{path}: unknown bundle format {doc.get('format')!r}")
    blobs = {name[len("arrays/"):-4]: data for name, data in members.items()}
    _check_runs(doc, blobs, path)
    return doc, blobs


def _check_runs(doc, blobs, path):
    for r in doc["runs"]:
        from .spec import RunSpec

        try:
            spec = RunSpec.from_json(json.dumps(r["spec"]))
        except (TypeError, ValueError, KeyError) as e:
            raise KitError(f"{path}: run {str(r.get('id'))[:12]} has a malformed spec ({e})") from e
        if spec.run_id != r["id"]:
            raise KitError(f"{path}: run {r['id'][:12]}'s id does not match its spec")
        for stage, info in r["stages"].items():
            blob = r["blobs"].get(stage)
            if blob in blobs:
                a = np.load(io.BytesIO(blobs[blob]), allow_pickle=False)
                if array_sha256(a) != info["sha256"]:
                    raise KitError(f"{path}: array of {r['id'][:12]}/{stage} does not match its hash")


def import_bundle(store: Store, path) -> dict:
    """Merge a verified bundle into the store (idempotent); returns what was added."""
    doc, blobs = read(path)
    before = {r["id"] for r in store.runs()}
    store.import_runs(doc["runs"], doc["pairs"], blobs, doc["datasets"])
    added = [r["id"] for r in doc["runs"] if r["id"] not in before]
    return {"runs": len(doc["runs"]), "added": len(added), "pairs": len(doc["pairs"]),
            "arrays": len(blobs), "host": doc["host"], "created": doc["created"]}
