"""The run store: a SQLite index over content-addressed .npy arrays under $KIT_HOME.

All SQL on the index is here; readers get records (kit.runs.store.records). Runs are written
by the runner (``put_run``, claims, ``note_dataset``) and the bundle importer (``import_runs``), pairs
by an audit (``add_pairs``), and runs dropped by ``kit store check --repair`` (``drop_runs``),
each in one transaction after every array has been verified. Analysis writes only its two
caches, ``cache_comparison`` and ``cache_verdicts`` (kit.runs.store.caches: recomputed when their
digest of the runs and version does not match).
What each run and dataset record is of (kit.core.subject) is their ``subject`` column, written
with the row and checked against its spec or summary as it is read (kit.runs.store.rows).
Every array read for a number is verified again (kit.runs.store.blobs, which remembers verified
files here). A claim per run id keeps concurrent plans from running the same spec twice.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
from collections.abc import Collection, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core import processes
from ...core.errors import Damaged, KitError
from ...core.paths import kit_home, writable
from ...core.spec import RunSpec
from ...core.subject import DATASET, KINDS_OF
from ...core.sweeps import sweep_store
from . import identity, kept, layout, meta, moving, rows, schema
from .blobs import Blobs, DamagedArray, array_sha256
from .caches import Caches
from .hosts import host_id
from .locked import ArraysLock, LockedConnection, read_only_index, refuse_damaged
from .records import DatasetSummary, Stage, StoredPair, StoredRun
from .rows import RunRow, StageRow

if TYPE_CHECKING:  # planning is above the store: its pair's type only, for annotations
    from ..planning.options import Pair

__all__ = ["Store", "StoredRun", "Stage", "DatasetSummary", "array_sha256", "DamagedArray"]
_CLAIM_STALE_S = 24 * 3600  # a claim from another node that cannot be checked, after a day
_SEEN_MAX = 20_000  # verified runs remembered by their rows' bytes (a few KB each)


def _where(dataset: str | None, kind: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause over runs (or datasets, by ``kind`` alone) and its arguments. A row of
    NULL subject (one the migration could not verify) is kept in every kind's: its reader then
    names it damaged, as it did before the column, instead of leaving it out unsaid."""
    parts: list[str] = []
    args: tuple[str, ...] = ()
    if dataset:
        parts, args = ["dataset=?"], (dataset,)
    if kind is not None:
        if kind not in KINDS_OF:
            raise ValueError(f"a subject kind is one of {', '.join(KINDS_OF)}, not {kind!r}")
        parts.append("(subject=? OR subject IS NULL)")
        args += (kind,)
    return (" WHERE " + " AND ".join(parts) if parts else ""), args


class Store(Caches):
    def __init__(self, root: Path | None = None, read_only: bool = False):
        self.root = Path(root) if root else kit_home(writing=False)
        path = self.root / "store.sqlite"
        layout.check(self.root)  # an emptied index or a file for arrays/: one line, before SQLite
        # a store this user cannot write (another user's, a shared read-only copy) is read:
        # every number is computed, nothing cached, and a command that writes says why not;
        # ``read_only``: opened so whatever it can write (`kit store check`, which only reads)
        self.read_only = read_only or (self.root.is_dir() and not writable(self.root))
        identity.refuse_missing(self.root, path)  # before SQLite makes an empty one there
        if self.read_only:
            conn = read_only_index(path)
        else:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise KitError(
                    f"cannot create the store folder {self.root}: {e.strerror or e}"
                ) from None
            if not identity.HOLDS:  # Python 3.11: checked read-only before the writer opens
                identity.looked_at(self.root, path)
            try:
                conn = sqlite3.connect(path, timeout=60, check_same_thread=False)
            except sqlite3.Error as e:
                raise KitError(f"the store index {path} cannot be opened ({e})") from None
        self.db = LockedConnection(conn, path)  # a damaged index or a full disk: one line
        try:  # before anything is written: an index a newer kit wrote is left as it is
            identity.hold_checkpoints(conn, True)  # a refused index is closed as it was found
            identity.refuse(self.root, self.db, path)
            refuse_damaged(self.db, path)  # every command alike, not as its queries reach it
            identity.hold_checkpoints(conn, False)
            st = os.stat(path)
            self.opened_as = (st.st_dev, st.st_ino)  # identity.still_here: the file, not a name
            schema.refuse_newer(self.db, path)
            self._migrate(path)
        except BaseException:  # a migration that fails has rolled back: the index is as it was
            self.db.close()
            raise
        self._seen: dict[
            tuple[Any, ...], StoredRun
        ] = {}  # {(run row, *stage rows): run}: see _verified
        self._lock = self.db.lock  # runs finish on several threads: one lock for every statement
        self.arrays_lock = ArraysLock(self.root / "store.lock")
        self.blobs = Blobs(self.root / "arrays", self)
        self.arrays_dir = self.blobs.root
        if not self.read_only:
            meta.remember(self)
            identity.remember(self)
            kept.migrate(self)  # a store from before the records gets them, once
            sweep_store(self.root)
        self.identity = identity.in_index(self.db)[
            0
        ]  # a killed import's spool goes with the next command

    def _migrate(self, path: Path) -> None:
        """Bring the index to this kit's schema; one this user cannot write is migrated as a copy
        in memory, its file left as it is (kit.runs.store.schema)."""
        if self.read_only:
            if schema.version(self.db) < schema.CURRENT:
                old, self.db = self.db, schema.migrated_copy(self.db, path)
                old.close()
        else:
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        if not self.read_only:
            schema.migrate(self.db, path)

    def moving_in(self) -> AbstractContextManager[None]:
        """Held from moving arrays in until their runs are indexed (locked.ArraysLock)."""
        return self.arrays_lock.writing()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self, count: bool = True) -> Iterator[LockedConnection]:
        """One transaction; ``count``: it changes what the store holds (runs, pairs, datasets),
        so it counts one write (kit.runs.store.identity), said in store.json once committed."""
        if self.read_only:  # reached only by a command that stores something
            raise KitError(
                f"the store {self.root} is not writable by this user: reading "
                "commands (kit runs, budget, verdicts, ...) work, this one writes; set "
                "KIT_HOME to a folder you can write"
            )
        with self._lock:
            with self.db:  # one transaction: all rows or none
                yield self.db
                writes = identity.counted(self, self.db) if count else None
            if writes is not None:
                identity.after_commit(self, writes)

    # -- runs -------------------------------------------------------------------------------
    def has_run(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is not None

    def put_run(
        self,
        spec: RunSpec,
        outdir: Path,
        manifest: dict[str, Any],
        held: Collection[str] = frozenset(),
    ) -> str:
        """Move a worker's arrays in, verified, and index them at once (kit.runs.store.moving);
        ``held``: blob keys of arrays not sent back because the store holds them."""
        return moving.put_run(self, spec, outdir, manifest, held)

    def held_blobs(self, dataset: str, runs: int = 8) -> frozenset[str]:
        """The blob keys of the arrays of the last ``runs`` runs stored of ``dataset`` that were
        verified here: a cluster node need not send back an array equal to one of them (a seed
        plan's k-mers and TF-IDF, nine tenths of its bytes, are the same in every run)."""
        return frozenset(
            b
            for (b,) in self.db.execute(
                "SELECT DISTINCT s.blob FROM stages s JOIN verified v ON v.blob = s.blob WHERE s.run IN "
                "(SELECT id FROM runs WHERE dataset=? ORDER BY rowid DESC LIMIT ?)",
                (dataset, runs),
            )
        )

    def blob_path(self, blob: str) -> Path:
        return self.blobs.path(blob)

    def stage_blobs(self, run_id: str) -> dict[str, str]:
        """{stage: blob key} of a run (the arrays may be absent for an imported run)."""
        return dict(self.db.execute("SELECT stage, blob FROM stages WHERE run=?", (run_id,)))

    def has_arrays(self, run_id: str) -> bool:
        return all(self.blobs.exists(b) for b in self.stage_blobs(run_id).values())

    def import_runs(
        self,
        runs: list[dict[str, Any]],
        pairs: list[dict[str, Any]],
        files: dict[str, Path],
        datasets: dict[str, dict[str, Any]],
    ) -> None:
        """Add verified runs (from a bundle) with their arrays and pairs, all or nothing.

        ``files`` are {blob: verified .npy file} moved in; ``datasets`` are {sha256: summary}
        that the importer found here (replacing) or marked unverified (kept only if none is
        known). Nothing a bundle derives (verdicts, comparisons) is stored: it is recomputed.
        """
        recorded = {
            r["blobs"][st]: i
            for r in runs
            for st, i in r["stages"].items()
            if r["blobs"].get(st) in files
        }
        with self.moving_in():  # a repair beside it waits: nothing it moves in is orphaned
            for blob, src in files.items():  # content-addressed: complete files, atomically
                i = recorded[blob]
                self.blobs.put_file(src, blob, i["sha256"], i["dtype"], i["shape"])
            texts = {
                r["id"]: json.dumps(r["spec"], sort_keys=True, separators=(",", ":")) for r in runs
            }  # what each is of, from its spec as the importer verified it
            subjects = {i: rows.run_subject(rows.verified_spec(i, t)) for i, t in texts.items()}
            run_rows = {
                r["id"]: (
                    r["id"],
                    texts[r["id"]],
                    r["spec"]["dataset"],
                    r["spec"]["stack"],
                    r["created"],
                    json.dumps(r["manifest"], sort_keys=True),
                    subjects[r["id"]],
                )
                for r in runs
            }
            stage_rows = {
                r["id"]: [
                    (st, i["sha256"], i["dtype"], json.dumps(i["shape"]), r["blobs"][st])
                    for st, i in r["stages"].items()
                ]
                for r in runs
            }
            pair_rows = [(p["factor"], p["level"], p["a"], p["b"], p["label"]) for p in pairs]
            set_rows = {
                h: (h, s.get("name", "?"), json.dumps(s, sort_keys=True), rows.dataset_subject(s))
                for h, s in datasets.items()
            }
            for i in run_rows:  # the records first: an index row always has its record
                kept.write(self.root, kept.run_doc(run_rows[i], stage_rows[i]))
            if pair_rows:
                kept.write(self.root, kept.pairs_doc(pair_rows))
            for set_row in set_rows.values():
                kept.write(self.root, kept.dataset_doc(set_row))
            with self._tx() as db:
                for i, row in run_rows.items():
                    db.execute(f"INSERT OR IGNORE {schema.RUN_ROW}", row)
                    db.executemany(
                        "INSERT OR IGNORE INTO stages VALUES (?,?,?,?,?,?)",
                        [(i, *st) for st in stage_rows[i]],
                    )
                db.executemany("INSERT OR IGNORE INTO pairs VALUES (?,?,?,?,?)", pair_rows)
                for h, summary in datasets.items():
                    verb = (
                        "INSERT OR IGNORE"
                        if summary.get("verified") is False
                        else "INSERT OR REPLACE"
                    )
                    db.execute(f"{verb} {schema.DATASET_ROW}", set_rows[h])

    # Every reader's run is verified (kit.runs.store.rows): a damaged one ends the command in
    # one line naming it and the repair. Leaving it out instead would change what the rest
    # conclude (a seed pair fewer moves the seed unit) while the output looks whole.
    _RUN_ROW = "SELECT id, spec, created, manifest, dataset, stack, subject FROM runs"

    def run(self, run_id: str) -> StoredRun:
        row = self.db.execute(self._RUN_ROW + " WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise KitError(f"no run {rows.shown(run_id)} in the store")
        return self._verified(row)

    def _verified(self, row: RunRow) -> StoredRun:
        """The run of ``row`` and its stage rows, verified; a row read again with the same bytes
        (a reader takes one run several times) is the run verified from them before."""
        stages = self._stage_rows(row[0])
        key = (*row, *stages)
        run = self._seen.get(key)
        if run is None:
            run = rows.verified(*row, stages)
            if len(self._seen) >= _SEEN_MAX:
                self._seen.clear()
            self._seen[key] = run
        return run

    def _stage_rows(self, run_id: str) -> list[StageRow]:
        return self.db.execute(
            "SELECT stage, sha256, dtype, shape, blob FROM stages WHERE run=? ORDER BY rowid",
            (run_id,),
        )

    def runs(self, dataset: str | None = None, subject: str | None = None) -> list[StoredRun]:
        """The runs (of ``dataset``, a dataset's or pipeline's sha256; of ``subject``, a kind of
        kit.core.subject), oldest first."""
        where, args = _where(dataset, subject)
        return [
            self._verified(r)
            for r in self.db.execute(f"{self._RUN_ROW}{where} ORDER BY created, id", args)
        ]

    def damaged_runs(self) -> dict[str, str]:
        """{run id: why} of every run whose rows are not what kit wrote (`kit store check`)."""
        out = {}
        r: RunRow
        for r in self.db.execute(self._RUN_ROW):
            _, why = rows.problem(*r, self._stage_rows(r[0]), thorough=True)
            if why:
                out[r[0]] = why
        return out

    def dependents(self, run_ids: Iterable[str]) -> dict[str, int]:
        """How many pairs and cached comparisons and verdicts name any of ``run_ids``."""
        runs = list(run_ids)
        q = ",".join("?" * len(runs))

        def count(sql: str, n: int) -> int:
            return int(self.db.execute(sql.format(q=q), runs * n).fetchone()[0])

        return {
            "pairs": count("SELECT count(*) FROM pairs WHERE a IN ({q}) OR b IN ({q})", 2),
            "comparisons": count(
                "SELECT count(*) FROM comparisons WHERE a IN ({q}) OR b IN ({q})", 2
            ),
            "verdicts": count("SELECT count(*) FROM verdicts WHERE run IN ({q})", 1),
        }

    def latest(self, kind: str = DATASET) -> str | None:
        """The sha256 of what the run stored last here of subject ``kind`` is of (insertion
        order, not the run's own date): a dataset's hash, or a lab pipeline's; None if no run
        is. A run of the other kind stored after it is never it."""
        where, args = _where(None, kind)
        row = self.db.execute(
            f"SELECT id, spec, subject FROM runs{where} ORDER BY rowid DESC LIMIT 1", args
        ).fetchone()
        return rows.verified_spec(*row).dataset if row else None  # a lab's names its file

    def latest_dataset(self) -> str | None:  # the name its many callers know
        return self.latest(DATASET)

    def specs(self, dataset: str | None = None) -> dict[str, RunSpec]:
        """{run id: spec} without reading manifests or stages."""
        where, args = _where(dataset, None)
        return {
            i: rows.verified_spec(i, s, k)
            for i, s, k in self.db.execute(f"SELECT id, spec, subject FROM runs{where}", args)
        }

    def sound_specs(self) -> dict[str, RunSpec]:
        """{run id: spec} of the runs whose spec is sound, damaged ones left out (for the check,
        which names those itself)."""
        out = {}
        for i, s, k in self.db.execute("SELECT id, spec, subject FROM runs"):
            spec, why = rows.spec_problem(i, s, subject=k)
            if spec is not None:
                out[i] = spec
        return out

    def kinds(self, dataset: str | None = None) -> dict[str, str]:
        """{run id: kind} (pipeline, torch, perturb or feed)."""
        return {i: s.kind for i, s in self.specs(dataset).items()}

    def runs_trained_on(self, run_ids: Iterable[str]) -> set[str]:
        """The torch, perturbed and cross-fed runs whose input is one of ``run_ids`` (damaged
        runs aside: the check names them itself)."""
        ids = set(run_ids)
        return {i for i, s in self.sound_specs().items() if s.input in ids}

    def stage_records(self) -> list[tuple[str, str, str, Stage]]:
        """(run id, stage, blob key, Stage) of every stored stage array."""
        out = []
        for r, st, h, d, sh, blob in self.db.execute(
            "SELECT run, stage, sha256, dtype, shape, blob FROM stages"
        ):
            try:
                out.append((r, st, blob, Stage(h, d, tuple(json.loads(sh)))))
            except (ValueError, TypeError):  # its run is damaged: the check names and drops it
                continue
        return out

    def drop_runs(self, run_ids: Iterable[str]) -> None:
        """Remove runs and everything computed from them (pairs, comparisons, verdicts), at once."""
        runs = list(run_ids)
        q = ",".join("?" * len(runs))
        kept.forget(self.root, runs=runs)  # a dropped run never comes back from its record
        with self._tx() as db:  # what was computed from the runs, then the runs
            for table, cols in (
                ("pairs", "ab"),
                ("comparisons", "ab"),
                ("verdicts", ("run",)),
                ("stages", ("run",)),
                ("runs", ("id",)),
            ):
                db.execute(
                    f"DELETE FROM {table} WHERE " + " OR ".join(f"{c} IN ({q})" for c in cols),
                    runs * len(cols),
                )

    def array(self, run_id: str, stage: str) -> np.ndarray:
        """A run's stage array, verified against its recorded hash, dtype and shape."""
        blob, sha, dtype, shape = self._stage_row(run_id, stage)
        a = self.blobs.load(blob, sha, dtype, shape, f"run {run_id[:12]} stage {stage}")
        if a is None:  # removed since _stage_row saw it
            raise self._absent(run_id, stage)
        return a

    def array_file(self, run_id: str, stage: str) -> Path:
        """The .npy file of a run's stage array, verified as ``array`` verifies it (hashed as it
        streams by unless remembered), never loaded: what an export copies as it is."""
        blob, sha, dtype, shape = self._stage_row(run_id, stage)
        path = self.blobs.verified_file(blob, sha, dtype, shape, f"run {run_id[:12]} stage {stage}")
        if path is None:  # removed since _stage_row saw it
            raise self._absent(run_id, stage)
        return path

    def _stage_row(self, run_id: str, stage: str) -> tuple[str, str, str, list[int]]:
        """(blob, sha256, dtype, shape) of a stage whose array is here, else one line."""
        row = self.db.execute(
            "SELECT blob, sha256, dtype, shape FROM stages WHERE run=? AND stage=?", (run_id, stage)
        ).fetchone()
        if row is None:
            raise KitError(f"run {run_id[:12]} has no stage {stage!r}")
        blob, sha, dtype, shape = row
        if not self.blobs.exists(blob):
            raise self._absent(run_id, stage)
        return blob, sha, dtype, json.loads(shape)

    def _absent(self, run_id: str, stage: str) -> KitError:
        """The one line for a stage whose array is not here: missing (a run made here), or
        never sent (an imported run)."""
        if self._made_here(run_id):
            return DamagedArray(
                f"the array of run {run_id[:12]} stage {stage} is missing from "
                f"{self.arrays_dir}; `kit store check --repair` drops the run and "
                "the next `kit run` makes it again"
            )
        return KitError(
            f"run {run_id[:12]} was imported without its arrays (stage {stage}); "
            "export it with --arrays to compare magnitudes"
        )

    def _made_here(self, run_id: str) -> bool:
        row = self.db.execute("SELECT id, spec FROM runs WHERE id=?", (run_id,)).fetchone()
        return row is not None and rows.verified_spec(*row).host == host_id()

    # -- claims: one process runs a spec at a time ---------------------------------------------
    def claim(self, run_id: str) -> bool:
        """Take the right to run ``run_id``: True unless a live process holds it.

        BEGIN IMMEDIATE takes the database's write lock before the claim is read, so two
        processes cannot both read "no claim" and both take it.
        """
        node, pid = platform.node(), os.getpid()
        now = datetime.now(UTC)
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                row = self.db.execute(
                    "SELECT node, pid, started FROM claims WHERE run=?", (run_id,)
                ).fetchone()
                if row is not None and (row[0], row[1]) != (node, pid):
                    age = (now - datetime.fromisoformat(row[2])).total_seconds()
                    alive = processes.alive(row[1]) if row[0] == node else age < _CLAIM_STALE_S
                    if alive:
                        self.db.rollback()
                        return False
                self.db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?,?,?,?)",
                    (run_id, node, pid, now.isoformat()),
                )
                self.db.commit()
            except BaseException:
                self.db.rollback()
                raise
        return True

    def release(self, run_id: str) -> None:
        with self._tx(count=False) as db:
            db.execute("DELETE FROM claims WHERE run=? AND pid=?", (run_id, os.getpid()))

    # -- pairs and comparisons --------------------------------------------------------------
    def add_pairs(self, pairs: Iterable[Pair]) -> None:
        found = [(p.factor, p.level, p.a.run_id, p.b.run_id, p.label) for p in pairs]
        if found:
            kept.write(self.root, kept.pairs_doc(found))
        with self._tx() as db:
            db.executemany("INSERT OR IGNORE INTO pairs VALUES (?,?,?,?,?)", found)

    def pair_factors(self, run_ids: Iterable[str]) -> list[str]:
        """The factors of the pairs in which any of ``run_ids`` takes part, sorted."""
        runs = list(run_ids)
        q = ",".join("?" * len(runs))
        return sorted(
            {
                f
                for (f,) in self.db.execute(
                    f"SELECT DISTINCT factor FROM pairs WHERE a IN ({q}) OR b IN ({q})", runs + runs
                )
            }
        )

    def pairs(self, dataset: str | None = None) -> list[StoredPair]:
        q = "SELECT p.factor, p.level, p.a, p.b, p.label FROM pairs p JOIN runs r ON r.id = p.a"
        args: tuple[str, ...] = ()
        if dataset:
            q, args = q + " WHERE r.dataset=?", (dataset,)
        return [StoredPair(*r) for r in self.db.execute(q + " ORDER BY p.rowid", args)]

    # -- datasets seen by runs ----------------------------------------------------------------
    def note_dataset(self, summary: dict[str, Any]) -> None:
        row = (
            summary["sha256"],
            summary["name"],
            json.dumps(summary, sort_keys=True),
            rows.dataset_subject(summary),
        )
        if not self.read_only:
            kept.write(self.root, kept.dataset_doc(row))
        with self._tx() as db:
            db.execute(f"INSERT OR REPLACE {schema.DATASET_ROW}", row)

    def datasets(self) -> dict[str, dict[str, Any]]:
        """{sha256: summary} of every dataset (and lab pipeline) the runs name; a damaged record
        is one line."""
        return {d.sha256: d.to_json() for d in self.subjects()}

    def subjects(self, kind: str | None = None) -> list[DatasetSummary]:
        """The store's records of what its runs are of (of subject ``kind`` only, if given), in
        the order they were first recorded; a damaged record is one line."""
        out = []
        where, args = ("", ()) if kind is None else _where(None, kind)
        for h, s, k in self.db.execute(
            f"SELECT sha256, summary, subject FROM datasets{where} ORDER BY rowid", args
        ):
            summary, why = rows.dataset_summary(h, s, k)
            if why:
                raise Damaged(
                    f"the store's record of dataset {rows.shown(str(h))} is damaged "
                    f"({why}); `kit store check --repair` drops it (the next run "
                    "records it anew)"
                )
            out.append(DatasetSummary.from_summary(k, summary or {}))
        return out

    def damaged_datasets(self) -> dict[str, str]:
        """{sha256: why} of the dataset records that are not what kit wrote (`kit store check`)."""
        records = self.db.execute("SELECT sha256, summary, subject FROM datasets")
        return {h: why for h, s, k in records if (why := rows.dataset_summary(h, s, k)[1])}

    def drop_datasets(self, shas: Collection[str]) -> None:
        kept.forget(self.root, datasets=shas)
        with self._tx() as db:
            db.executemany("DELETE FROM datasets WHERE sha256=?", [(h,) for h in shas])

    # -- which array files were verified (kit.runs.store.blobs): a file's identity when it was -----
    def verified_ident(self, blob: str) -> str | None:
        row = self.db.execute("SELECT ident FROM verified WHERE blob=?", (blob,)).fetchone()
        return None if row is None else row[0]

    def note_verified(self, blob: str, ident: str | None) -> None:
        if self.read_only:  # verified again next time: reading needs no write
            return
        with self._tx(count=False) as db:  # a remembered hash, not what the store holds
            db.execute("INSERT OR REPLACE INTO verified VALUES (?,?)", (blob, ident))

    def forget_verified(self, blob: str) -> None:
        if self.read_only:
            return
        with self._tx(count=False) as db:
            db.execute("DELETE FROM verified WHERE blob=?", (blob,))
