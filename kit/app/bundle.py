"""Run bundles: one portable, checksummed file of runs that another machine can import.

A bundle is a gzip-compressed tar with ``MANIFEST.json`` (the sha256 and size of every other
member), ``bundle.json`` (format, origin host, the datasets' names as hints, runs with their
specs, manifests and stage hashes, the pairs among them, and the files of their lab
pipelines: kit.app.bundle_pipelines) and, optionally, ``arrays/BLOB.npy``, in that order.
Import verifies all of it before it touches the store (kit.app.bundle_read). Nothing a bundle could
derive is taken from it: verdicts and
comparisons are computed here from the arrays, and a dataset's summary is this machine's own
(a dataset not found here is stored as unverified). Runs that claim this machine are refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from datetime import UTC, datetime
from pathlib import Path

from ..core.atomic import atomic_path
from ..core.caps import stage_bytes, stage_too_big
from ..core.errors import KitError
from ..core.spec import RunSpec
from ..core.spools import EXPORT, spool
from ..core.version import __version__
from ..data import load_dataset
from ..data.dataset import MAX_SYNTHETIC_N, stored_datasets
from ..data.pipelines import known_summary, why_absent
from ..envs.containers import archives, images
from ..envs.containers.loaded import is_loaded
from ..envs.containers.runtime import runtime
from ..envs.kinds.container import split_name
from ..envs.probes import carried
from ..runs.store import Store
from ..runs.store.hosts import host
from ..worker.dtypes import recorded_problem
from ..worker.kinds import shown
from .bundle_checks import FORMAT
from .bundle_derived import check_derived
from .bundle_pipelines import carried as carried_files
from .bundle_pipelines import check_ids, summary
from .bundle_read import opened, read

__all__ = [
    "export",
    "import_bundle",
    "local_dataset",
    "opened",
    "plan_export",
    "read",
    "recorded_rows",
    "unverified",
]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path) -> str:
    with open(path, "rb") as f:  # as it streams by: a bundle may hold gigabytes
        return hashlib.file_digest(f, "sha256").hexdigest()


# -- export -----------------------------------------------------------------------------------
def plan_export(store: Store, run_ids: list, arrays: bool, images: bool = False) -> dict:
    """What an export would write: runs, pairs among them, the array bytes if asked, and the
    recipe of each image the runs ran in (with ``images``, the images themselves)."""
    runs = [store.run(r) for r in run_ids]
    for r in runs:  # what import reads: a run an older kit stored and no import takes stays here
        for stage, st in r.stages.items():
            why = recorded_problem(st.dtype, text=bool(r.spec.pipeline))
            if why:
                raise KitError(
                    f"run {r.id[:12]} stage {shown(stage)}: dtype {st.dtype!r} {why}, "
                    "so no `kit import` would read it (an older kit stored it): "
                    "export the runs of other factors (--factor)"
                )
            why = stage_too_big(stage_bytes(st.dtype, st.shape))
            if why:  # refused by import with or without its arrays
                raise KitError(
                    f"run {r.id[:12]} stage {shown(stage)} {why}, so no `kit import` "
                    "would read it (an older kit stored it): export the runs of "
                    "other factors (--factor)"
                )
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
    recipes = image_recipes(runs, images)
    return {
        "runs": runs,
        "pairs": pairs,
        "blobs": blobs,
        "array_bytes": size,
        "pipelines": _pipelines(runs),
        "images": recipes,
        "image_bytes": sum(r.get("size") or 0 for r in recipes.values() if r["archive"]),
    }


def image_recipes(runs, archives: bool) -> dict:
    """{container stack: its image's recipe} of the runs' container stacks whose image is the
    one built here (kit.envs.containers.images.carried); ``archives``: each is to be carried
    too, and one that is not here any more is refused (its recipe alone can be exported)."""
    ran: dict[tuple[str, tuple], set] = {}  # {(container stack, (stack, base)): image ids}
    for r in runs:
        parts = split_name(r.spec.stack)
        # a bundle's image loaded here is not passed on: its runs' manifests still name it
        if parts is not None and not is_loaded(parts[1]):
            ran.setdefault((r.spec.stack, parts), set()).add(r.spec.stack_id)
    out = {}
    for (name, (stack, base)), ids in sorted(ran.items()):
        rec = images.record(stack, base) or {}
        if ids == {rec.get("id")}:
            out[name] = {**images.carried(rec), "archive": archives}
        elif archives:
            raise KitError(
                f"the runs of {name} ran in image {', '.join(i[7:19] for i in sorted(ids))}"
                ", which is not the one built here now (rebuilt since?): export them "
                "--no-image (their recipe travels in their manifests) or run them again"
            )
    return out


def export(
    store: Store,
    run_ids: list,
    out,
    arrays: bool = False,
    images: bool = False,
    log=lambda msg: None,
) -> dict:
    """Write the bundle to ``out`` atomically; returns a summary with its sha256.

    Every array is verified as it is read for the bundle: damage is refused, never shipped.
    ``images``: each container stack's image travels as an OCI archive (its recipe always does).
    """
    if not run_ids:
        raise KitError("nothing to export: no runs selected")
    p = plan_export(store, run_ids, arrays, images)
    datasets = store.datasets()
    # runs and what they are made of, never what kit derives from them (verdicts, comparisons):
    # the importer computes those itself
    runs = [{**r.to_json(), "blobs": store.stage_blobs(r.id)} for r in p["runs"]]
    doc = {
        "format": FORMAT,
        "kit": __version__,
        "host": host(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "arrays": arrays,
        "runs": runs,
        "pairs": p["pairs"],
        "probes": carried(r.spec.stack for r in p["runs"]),  # what each probe is, no lock
        # what a lab's runs mean (KINDS): its file, which the importer reads, never runs
        "pipelines": p["pipelines"],
        # hints to find each dataset on the other machine; it is never stored from here
        "datasets": {r.spec.dataset: datasets.get(r.spec.dataset, {}) for r in p["runs"]},
        # how each image the runs ran in is made again (and named): its archive is code, run
        # at the other end only when asked (kit compare --trust-image)
        "images": p["images"],
    }
    body = json.dumps(doc, sort_keys=True).encode()
    # each array is the store's own .npy file, verified (hashed as it streams by, never loaded)
    # and copied as it is: a member is never held whole in memory (np.save into memory held
    # each array twice over)
    files = {
        f"arrays/{blob}.npy": store.array_file(run, stage)
        for blob, (run, stage) in p["blobs"].items()
    }
    with spool(store.root, EXPORT) as tmp_dir:
        for name, rec in p["images"].items():  # after the arrays, as import reads them
            if rec["archive"]:
                log(f"writing {name}'s image {rec['id'][7:19]} as an OCI archive")
                files[f"images/{rec['id'][7:]}.tar"] = archives.save(
                    runtime(), rec["id"], Path(tmp_dir) / f"{rec['id'][7:]}.tar"
                )
        manifest = {"bundle.json": {"sha256": _sha(body), "size": len(body)}}
        for name, path in files.items():
            manifest[name] = {"sha256": _file_sha(path), "size": os.stat(path).st_size}
        with atomic_path(out) as tmp, tarfile.open(tmp, "w:gz") as tar:
            _add(tar, "MANIFEST.json", json.dumps(manifest, sort_keys=True).encode())
            _add(tar, "bundle.json", body)
            for name, path in files.items():
                _add_file(tar, name, path, manifest[name])
    out = Path(out)
    return {
        "file": str(out),
        "runs": len(p["runs"]),
        "pairs": len(p["pairs"]),
        "arrays": len(p["blobs"]),
        "images": sum(r["archive"] for r in p["images"].values()),
        "bytes": out.stat().st_size,
        "sha256": _file_sha(out),
    }


def _pipelines(runs) -> dict:
    """The files of the runs' lab pipelines. A pipeline whose verified file is not here (its
    runs came in a bundle, or its kept file was edited) is refused now, not met at the other
    end: without its file, what its outputs are (KINDS: the truth, probabilities, protein ids)
    would not travel."""
    files = carried_files(r.spec.pipeline for r in runs if r.spec.pipeline)
    lacking = [r for r in runs if r.spec.pipeline and r.spec.pipeline not in files]
    if lacking:
        sha = lacking[0].spec.pipeline
        here = host()["id"]
        why = why_absent(sha, any(r.spec.host == here for r in lacking if r.spec.pipeline == sha))
        raise KitError(
            f"cannot carry the file of pipeline {sha[:12]}: {why}. Without it what the runs' "
            "outputs are would not travel: `kit export --pipeline FILE.py` with the file as "
            "it was run carries it"
        )
    return files


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0  # reproducible members
    tar.addfile(info, io.BytesIO(data))


class _Hashing(io.RawIOBase):
    """A file read through, hashed as it goes: what was written is what MANIFEST.json says."""

    def __init__(self, f):
        self._f, self.hash = f, hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, b):
        n = self._f.readinto(b)
        self.hash.update(memoryview(b)[:n])
        return n


def _add_file(tar, name, path, said: dict):
    """Member ``name`` streamed from ``path``; refused (the bundle is not written) if the file
    changed since MANIFEST.json recorded it."""
    info = tarfile.TarInfo(name)
    info.size = said["size"]
    info.mtime = 0
    with open(path, "rb") as f:
        read = _Hashing(f)
        tar.addfile(info, io.BufferedReader(read, 1024**2))
        if read.hash.hexdigest() != said["sha256"] or f.read(1):
            raise KitError(f"{path} changed while it was exported; export again")


# -- import -----------------------------------------------------------------------------------
def local_dataset(hint: dict, sha: str):
    """The dataset with this sha256 on this machine, found by the bundle's hint (its name and
    size), else among the datasets stored here; None when it is not here. The hint is only a
    place to look, and the sha256 decides: nothing is generated, fetched or kept because a
    bundle names it (a forged "synthetic, 200,000 rows" made a 72 MB dataset on import)."""
    hint = hint if isinstance(hint, dict) else {}
    name, rows = str(hint.get("name") or ""), _rows(hint)
    try:
        if hint.get("source") == "synthetic" and rows:
            ds = load_dataset("synthetic", rows, generate=False)
        else:
            ds = load_dataset(name.split("[:")[0], generate=False)
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


def _rows(hint: dict):
    rows = hint.get("rows")
    return rows if type(rows) is int and rows > 0 else None


def recorded_rows(runs):
    """The proteins a bundle's kit runs embedded (their ``svd_rand`` stage's rows), or None."""
    held = {
        r["manifest"]["stages"]["svd_rand"]["shape"][0]
        for r in runs
        if "svd_rand" in r["manifest"].get("stages", {})
    }
    return held.pop() if len(held) == 1 else None


def wanted(hint: dict, sha: str, runs) -> str:
    """Which dataset a bundle's ``runs`` need and how to make it here, the words of an import's
    note: its size is what the runs recorded, its name the hint's (the sender's word)."""
    hint = hint if isinstance(hint, dict) else {}
    name, rows = str(hint.get("name") or "")[:64], recorded_rows(runs)
    said = sha[:12] + (f" ({name} by the bundle's word" if name else " (")
    said += (f", {rows:,} proteins by its runs)" if rows else ")") if name or rows else ""
    if hint.get("source") == "synthetic" and rows and 100 <= rows <= MAX_SYNTHETIC_N:
        return (
            f"{said}: `kit run --factor repeat --dataset synthetic --n {rows}` makes the "
            "synthetic set of that size"
        )
    return f"{said}: `kit data import` or `kit data fetch` makes it"


def unverified(sha: str) -> dict:
    """What the store records of a bundle's dataset that is not on this machine."""
    return {
        "sha256": sha,
        "name": f"{sha[:12]} (a bundle's; not on this machine, unverified)",
        "verified": False,
    }


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
            raise KitError(
                f"{path}: run {r['id'][:12]} claims to have been made on this machine "
                "(this KIT_HOME's host id) but is not here; refusing the bundle"
            )
    datasets, labs = {}, doc["_declared"]  # what check_document read of the pipelines' files
    check_ids(doc, files, labs, path)
    check_derived(doc, path)  # pair labels recomputed from their specs (kit compare's too)
    for sha in dict.fromkeys(r["spec"]["dataset"] for r in doc["runs"]):
        if sha in labs:  # a lab's: its file here, else what the bundle's file declares
            datasets[sha] = known_summary(sha) or summary(sha, labs[sha])
            continue
        ds = local_dataset(doc["datasets"].get(sha), sha)
        datasets[sha] = ds.summary() if ds else known_summary(sha) or unverified(sha)
    store.import_runs(doc["runs"], doc["pairs"], files, datasets)
    added = [r["id"] for r in doc["runs"] if r["id"] not in before]
    return {
        "runs": len(doc["runs"]),
        "added": len(added),
        "pairs": len(doc["pairs"]),
        "arrays": len(files),
        "host": doc["host"],
        "created": doc["created"],
        "unverified": sorted(h for h, s in datasets.items() if s.get("verified") is False),
        "wanted": {
            h: wanted(
                doc["datasets"].get(h), h, [r for r in doc["runs"] if r["spec"]["dataset"] == h]
            )
            for h, s in datasets.items()
            if s.get("verified") is False
        },
    }
