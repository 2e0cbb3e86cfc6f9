"""`kit store check`: verify everything a store holds; with repair, drop what is damaged.

Every array is hashed again against what its runs recorded, every dataset file a worker reads
is re-hashed, every run's rows are verified (its spec hashes to its id, its manifest parses:
kit.runs.store.rows), and the array files on disk are counted and matched with the index. Repair
deletes damaged files and drops the damaged runs and those that depended on a damaged or missing
array, with their pairs, comparisons, verdicts and the runs trained on them: the next `kit run`
of the same factors makes them again.

Repair never races a run: what no run refers to is decided, and deleted, under the store's
arrays lock taken exclusive, which every writer holds shared from moving a run's arrays in
until the run is indexed (kit.runs.store.locked.ArraysLock). An array file no run refers to is
deleted only if this index has seen it be born and it is older than ``GRACE_S`` (a writer that
holds no lock, such as a bundle import, indexes it within that time); one older than the index
is moved to ``unindexed/``, never deleted: an index moved aside or restored may refer to it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core import home_files
from ...core.atomic import stale_notes
from ...core.errors import KitError
from ...core.hosts import read_record
from ...core.paths import subdir
from ...core.small_files import NotKits
from ...data.dataset import read_dataset_file, verify_worker_file
from ...data.pipelines import MISSING, kept_problem
from . import identity, kept, layout, meta
from .hosts import host_id
from .index import Store
from .locked import DamagedIndex
from .rows import shown

GRACE_S = 3600  # an unreferenced array file younger than this may be an import's, not indexed yet


Recorded = dict[str, tuple[str, str, list[int]]]  # {blob: (sha, dtype, shape)}


def _recorded(store: Store) -> tuple[Recorded, dict[str, set[str]], set[str]]:
    """{blob: (sha, dtype, shape)}, {blob: runs using it}, and the runs made on this machine
    (under this host id, or the one the index recorded: a remade host.json changes nothing)."""
    here = {meta.host(store.db)}
    try:  # a check that only reads makes no host.json: the index's record is this machine's
        if not store.read_only:
            here.add(host_id())
        elif got := read_record(store.root / "host.json"):
            here.add(got["id"])
    except PermissionError:  # another user's host.json: the index's record is read instead
        pass
    except NotKits:  # a damaged host.json: reported by the check, set aside by repair
        pass
    local = {i for i, s in store.sound_specs().items() if s.host in here}
    recorded: Recorded = {}
    users: dict[str, set[str]] = {}
    for run, _, blob, st in store.stage_records():
        recorded[blob] = (st.sha256, st.dtype, list(st.shape))
        users.setdefault(blob, set()).add(run)
    return recorded, users, local


def opened(root: Path, repair: bool) -> tuple[Store, list[str]]:
    """The store at ``root`` for checking, and what a repair moved aside so that it opens (an
    emptied index, a file for arrays/: kit.runs.store.layout); without repair these are the
    one line the store's opening says (and a stale write-ahead log, a replaced or missing
    index: kit.runs.store.identity)."""
    # the index's shape, then whether it is this store's (a stale log set aside: kit.runs.store.identity)
    moved = [*layout.repair(root), *identity.repair(root)] if repair else []
    if not repair and (Path(root) / "store.sqlite").exists():
        # a check only reads: nothing written, so it runs on a full disk and a read-only store
        return Store(root, read_only=True), moved
    try:
        return Store(root), moved
    except DamagedIndex:  # with records beside the arrays, a new index is made from them
        if not (repair and layout.has_records(root)):
            raise
    moved += layout.set_index_aside(Path(root), "is damaged", also=[identity.FILE])
    return Store(root), moved


def _named_datasets(root: Path, seen: set[Path]) -> list[tuple[Path, str]]:
    """(path, why) of each named dataset file (``datasets/NAME.json``) that does not read as
    the dataset it records: empty, cut short, garbage, or records that do not hash to its
    sha256 (its shape is home_files'; one of ``seen`` is said already, and never opened)."""
    out = []
    for path in sorted(Path(root).glob("datasets/*.json")):
        if path in seen:
            continue
        try:
            read_dataset_file(path)
        except KitError as e:
            out.append((path, f"does not read as a dataset ({str(e)[:160]})"))
    return out


def _kept_pipelines(root: Path, seen: set[Path]) -> list[tuple[Path, str]]:
    """(path, why) of each kept pipeline file (``pipelines/by-hash/SHA.py``) that is not
    pipeline SHA: edited after it was kept (its shape is home_files'; one of ``seen`` is said
    already, and never opened). Its runs were made from the file as it was."""
    return [
        (path, why)
        for path in sorted(Path(root).glob("pipelines/by-hash/*.py"))
        if path not in seen and (why := kept_problem(path)) not in (None, MISSING)
    ]


def _unreferenced(store: Store, paths: dict[str, Path]) -> tuple[list[str], list[str], list[str]]:
    """Files no run refers to, as (orphans to delete, older than the index, too recent)."""
    born, now = meta.born(store.db), time.time()
    orphans: list[str] = []
    unindexed: list[str] = []
    recent: list[str] = []
    for key, path in paths.items():
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        # when its bytes were written: an importer writes them just before it indexes them
        if st.st_mtime > now - GRACE_S:
            recent.append(key)
        elif st.st_mtime < born:  # its bytes predate this index: another index's, maybe
            unindexed.append(key)
        else:
            orphans.append(key)
    return orphans, unindexed, recent


def check_store(
    store: Store, repair: bool = False, full: bool = True, set_aside: Sequence[str] = ()
) -> dict[str, Any]:
    """What is damaged in ``store`` (and, with ``repair``, what was dropped because of it).

    ``full`` hashes every array again; otherwise arrays verified since their last change are
    trusted (kit.runs.store.blobs remembers each verified file's identity; an edit changes it).
    ``set_aside``: what a repair moved aside before the store could open (``opened``).
    Each file kit keeps in the home that is not one it wrote (kit.core.home_files: a link, a
    FIFO, a device, too large) is reported, never opened; repair moves it aside first.
    """
    if repair:  # what the records hold and the index lacks goes back first, then is checked
        set_aside = [*set_aside, *kept.restore(store)]
    lacks = kept.differences(store)
    home = home_files.problems(store.root)
    home += _named_datasets(store.root, {p for p, _ in home})
    home += _kept_pipelines(store.root, {p for p, _ in home})
    if repair and home:
        set_aside, home = [*set_aside, *home_files.set_aside(home)], []
    # what killed writes outside KIT_HOME left, by their notes: said, never removed (a note may
    # be planted); repair forgets the notes
    notes = [(note, left) for note, _, left in stale_notes(store.root) if left]
    recorded, _, _ = _recorded(store)
    # hashing takes long: done without the lock, while runs go on being stored
    suspect = {
        b
        for b, (sha, dtype, shape) in recorded.items()
        if store.blobs.exists(b) and store.blobs.problem(b, sha, dtype, shape, force=full)
    }
    # no writer is between moving arrays in and indexing
    with store.arrays_lock.maintaining(reading=store.read_only):
        recorded, users, local = _recorded(store)
        files = store.blobs.files()
        damaged = {}
        for b in suspect & set(recorded):  # a fresh copy may have replaced it meanwhile
            if store.blobs.exists(b) and (why := store.blobs.problem(b, *recorded[b], force=True)):
                damaged[b] = why
        missing = {}
        for blob in recorded:
            if blob not in files:
                made_here = sorted(users[blob] & local)
                if made_here:  # an imported run may travel without arrays; a local one may not
                    missing[blob] = made_here
        orphans, unindexed, recent = _unreferenced(
            store, {k: p for k, p in files.items() if k not in recorded}
        )
        shown_home = {p for p, _ in home}  # said once, and never opened
        bad_datasets = {
            p.name: why
            for p in (store.root / "datasets" / "by-hash").glob("*.json")
            if p not in shown_home and (why := verify_worker_file(p))
        }
        records = store.damaged_datasets()  # a summary that is not JSON, or not a summary
        runs = store.damaged_runs()  # a spec that does not hash to its id, a broken manifest
        doomed = {r for b in list(damaged) + list(missing) for r in users[b]} | set(runs)
        # torch and perturbed runs trained on a dropped run's embedding go with it
        drop = sorted(doomed | store.runs_trained_on(doomed))
        factors = store.pair_factors(drop) if drop else []
        lost = store.dependents(drop) if drop else {"pairs": 0, "comparisons": 0, "verdicts": 0}
        report = {
            "arrays": len(recorded),
            "files": len(files),
            "damaged": [
                {"blob": b, "why": w, "runs": sorted(users[b])} for b, w in damaged.items()
            ],
            "missing": [{"blob": b, "runs": r} for b, r in missing.items()],
            "damaged_runs": [{"run": shown(r), "why": w} for r, w in runs.items()],
            "damaged_records": [{"dataset": shown(h), "why": w} for h, w in records.items()],
            "dependents": lost,
            "set_aside": list(set_aside),
            "home_files": [{"path": str(p), "why": w} for p, w in home],
            "outside": [{"note": str(n), "left": left} for n, left in notes],
            "index_lacks": {k: lacks[k] for k in ("runs", "pairs", "datasets")},
            "damaged_kept": [{"path": str(p), "why": w} for p, w in lacks["damaged"]],
            "orphans": len(orphans),
            "unindexed": len(unindexed),
            "recent": len(recent),
            "unindexed_dir": str(store.root / "unindexed"),
            "datasets": bad_datasets,
            "runs_affected": [shown(r, 64) for r in drop],
            "factors_to_rerun": factors,
            "repaired": False,
        }
        report["ok"] = not (
            damaged
            or missing
            or orphans
            or unindexed
            or bad_datasets
            or runs
            or set_aside
            or records
            or home
            or notes
            or any(lacks.values())
        )
        if repair and not report["ok"]:
            _repair(store, drop, recorded, damaged, orphans, unindexed)
            for note, _ in notes:
                note.unlink(missing_ok=True)
            for path, _ in lacks["damaged"]:  # the index holds its rows: written again if need be
                path.unlink(missing_ok=True)
            store.drop_datasets(records)  # a run records its dataset anew when it is next made
            for name in bad_datasets:  # made again from the named dataset before the next run
                (subdir("datasets") / "by-hash" / name).unlink(missing_ok=True)
            report["repaired"] = True
    return report


def _repair(
    store: Store,
    drop: list[str],
    recorded: Recorded,
    damaged: dict[str, str],
    orphans: list[str],
    unindexed: list[str],
) -> None:
    """Drop the runs, delete the damaged files, the orphans and the dropped runs' files no
    remaining run refers to; move the files older than the index aside. Under the lock."""
    store.drop_runs(drop)
    still = {blob for _, _, blob, _ in store.stage_records()}
    for b in set(damaged) | set(orphans) | (set(recorded) - still):
        store.blobs.forget(b)
    for b in unindexed:
        store.blobs.set_aside(b, store.root / "unindexed")
