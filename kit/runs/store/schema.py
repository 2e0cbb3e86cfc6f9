"""The index's schema version (SQLite ``user_version``) and the migrations that bring an older index up to it.

Version 0 is an index written without a version: its tables, made at every open with CREATE IF
NOT EXISTS (an older version 0 may lack ``meta`` and ``verified``, which opening makes). Each
migration ``n`` is a function that brings version ``n - 1`` to ``n``; all of them run in one
transaction with the new version, so an index is at one version or the next, never between. A
migration only adds (tables, columns, indexes) and fills what it adds from rows kit verifies.
A reader that cannot write (a read-only store) migrates a copy of an older index in memory
(``migrated_copy``) and leaves the file as it is. An index of a later version than this kit
knows is refused before anything is written to it: a newer kit may have changed what its rows
mean.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...core.errors import KitError
from . import rows
from .locked import LockedConnection

_V0 = [
    """CREATE TABLE IF NOT EXISTS runs (
        id TEXT PRIMARY KEY, spec TEXT NOT NULL, dataset TEXT NOT NULL, stack TEXT NOT NULL,
        created TEXT NOT NULL, manifest TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS stages (
        run TEXT NOT NULL REFERENCES runs(id), stage TEXT NOT NULL, sha256 TEXT NOT NULL,
        dtype TEXT NOT NULL, shape TEXT NOT NULL, blob TEXT NOT NULL, PRIMARY KEY (run, stage))""",
    """CREATE TABLE IF NOT EXISTS pairs (
        factor TEXT NOT NULL, level TEXT NOT NULL, a TEXT NOT NULL REFERENCES runs(id),
        b TEXT NOT NULL REFERENCES runs(id), label TEXT NOT NULL, PRIMARY KEY (factor, level, a, b))""",
    """CREATE TABLE IF NOT EXISTS comparisons (
        a TEXT NOT NULL, b TEXT NOT NULL, version INTEGER NOT NULL, result TEXT NOT NULL,
        PRIMARY KEY (a, b, version))""",
    """CREATE TABLE IF NOT EXISTS verdicts (
        run TEXT NOT NULL REFERENCES runs(id), version INTEGER NOT NULL, result TEXT NOT NULL,
        PRIMARY KEY (run, version))""",
    "CREATE TABLE IF NOT EXISTS datasets (sha256 TEXT PRIMARY KEY, name TEXT NOT NULL, summary TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS claims (
        run TEXT PRIMARY KEY, node TEXT NOT NULL, pid INTEGER NOT NULL, started TEXT NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS verified (blob TEXT PRIMARY KEY, ident TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
]


def _v1(db: LockedConnection) -> None:
    """Version 0's tables (a new index, or one an older kit left without meta or verified), and
    indexes for the lookups every reader and repair makes: a dataset's runs, a run's pairs."""
    for sql in _V0 + [
        "CREATE INDEX IF NOT EXISTS runs_by_dataset ON runs(dataset)",
        "CREATE INDEX IF NOT EXISTS pairs_by_a ON pairs(a)",
        "CREATE INDEX IF NOT EXISTS pairs_by_b ON pairs(b)",
    ]:
        db.execute(sql)


_SUBJECT = "subject TEXT CHECK (subject IN ('dataset', 'pipeline'))"


def _v2(db: LockedConnection) -> None:
    """What each run and each datasets record is of, as a column (kit.core.subject: a dataset
    kit's own pipeline read, or a lab's pipeline file), filled from the verified spec (a run of
    a pipeline names it) or summary (a pipeline's is marked ``"source": "pipeline"``). A row that
    does not verify keeps NULL: `kit store check` names it damaged, as it did before. Rows are
    addressed by rowid: a damaged id may not be text SQLite can bind."""
    db.execute(f"ALTER TABLE runs ADD COLUMN {_SUBJECT}")
    db.execute(f"ALTER TABLE datasets ADD COLUMN {_SUBJECT}")
    for rowid, run_id, text in db.execute("SELECT rowid, id, spec FROM runs"):
        spec, why = rows.spec_problem(run_id, text)
        if spec is not None:
            db.execute("UPDATE runs SET subject=? WHERE rowid=?", (rows.run_subject(spec), rowid))
    for rowid, sha, text in db.execute("SELECT rowid, sha256, summary FROM datasets"):
        summary, why = rows.dataset_summary(sha, text)
        if summary is not None:
            db.execute(
                "UPDATE datasets SET subject=? WHERE rowid=?",
                (rows.dataset_subject(summary), rowid),
            )
    db.execute("CREATE INDEX runs_by_subject ON runs(subject)")
    db.execute("CREATE INDEX datasets_by_subject ON datasets(subject)")


# the rows as writers insert them, by column (a later version's columns are not at the end of
# an older index's table): every writer writes the subject column
RUN_ROW = "INTO runs (id, spec, dataset, stack, created, manifest, subject) VALUES (?,?,?,?,?,?,?)"
DATASET_ROW = "INTO datasets (sha256, name, summary, subject) VALUES (?,?,?,?)"

# MIGRATIONS[n - 1] brings version n - 1 to n. Never change one that has shipped: add the next.
MIGRATIONS = [_v1, _v2]
CURRENT = len(MIGRATIONS)


def version(db: LockedConnection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(db: LockedConnection, path: Path) -> None:
    """A one-line KitError for an index a later kit wrote (nothing was written to it)."""
    v = version(db)
    if v > CURRENT:
        raise KitError(
            f"the store index {path} was written by a newer kit (schema version {v}; "
            f"this kit knows up to {CURRENT}): upgrade kit to use this store, or set "
            "KIT_HOME to another folder; it was left as it is"
        )


def migrate(db: LockedConnection, path: Path) -> None:
    """Bring the index to ``CURRENT`` in one transaction (nothing to do: no transaction).

    BEGIN IMMEDIATE takes the write lock before the version is read again, so two kits opening
    one old index never both migrate it."""
    if version(db) == CURRENT:
        return
    with db.lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            refuse_newer(db, path)  # another, newer kit may have migrated it meanwhile
            for step in MIGRATIONS[version(db) :]:
                step(db)
            db.execute(f"PRAGMA user_version = {CURRENT}")
            db.commit()
        except BaseException:
            db.rollback()
            raise


def migrated_copy(db: LockedConnection, path: Path) -> LockedConnection:
    """``db`` (an index this user cannot write, older than ``CURRENT``) copied into memory and
    migrated there: its readers read the columns a later version added, the file is untouched."""
    mem = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        with db.lock:
            db.conn.backup(mem)
    except sqlite3.Error as e:
        mem.close()
        raise KitError(f"the store index {path} cannot be read ({e})") from None
    copy = LockedConnection(mem, path)
    migrate(copy, path)
    return copy
