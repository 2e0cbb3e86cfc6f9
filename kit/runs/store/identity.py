"""The store's identity and write count, kept in its index and in ``store.json`` beside it.

SQLite takes whatever files lie at the index's path as the store: a new empty file where a
pipeline deleted the index, another store's index, or the index with a stale write-ahead log
put back beside it (a backup's, or a copy made while kit ran), whose pages it reads over the
newer ones and writes back on the next close. Each is the store rolled back or emptied without
a word. So each store gets a random id, and each transaction that changes what it holds counts
one write (``generation``) in the index; ``store.json`` is written after the commit, so in a
sound store it never names a later write than the index holds. An index that is not the store
``store.json`` names, or holds fewer writes, is refused before anything reads or writes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ...core import home_files
from ...core.atomic import write_bytes
from ...core.errors import Damaged, KitError
from ...core.small_files import NotKits, read_home_json
from .locked import DamagedIndex, LockedConnection, _Rows, refuse_damaged

if TYPE_CHECKING:  # the store opens through this module: its type only, for annotations
    from .index import Store
    from .locked import Params

FILE = "store.json"
_ID = re.compile(r"[0-9a-f]{32}\Z")
_REPAIR = (
    "`kit store check` says what differs; `kit store check --repair` sets a stale "
    "write-ahead log aside (kept), or else takes the index as it is"
)


def recorded(root: Path) -> tuple[str, int] | None:
    """(store id, writes) that ``store.json`` records; None when there is none (a store made
    before it, or a new one); anything else there is NotKits."""
    path = Path(root) / FILE
    doc = read_home_json(path)
    if doc is None:
        return None
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("store"), str)
        and _ID.match(doc["store"])
        and type(doc.get("generation")) is int
        and doc["generation"] >= 0
    ):
        raise NotKits(path, "is not a store's identity record")
    return doc["store"], doc["generation"]


def in_index(db: LockedConnection | _Plain) -> tuple[str | None, int]:
    """(store id, writes) that the index on ``db`` holds; (None, 0) for one without an id."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
        return None, 0
    known = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('store', 'generation')"))
    return known.get("store"), int(known.get("generation") or 0)


def problem(root: Path, db: LockedConnection) -> str | None:
    """Why the index open on ``db`` is not the store ``root/store.json`` names (None: it is)."""
    mine = recorded(root)  # read first: written after each commit, so the index is never behind it
    if mine is None:
        return None
    ident, writes = in_index(db)
    if ident is None:
        return (
            f"holds no store identity, while {Path(root) / FILE} names store {mine[0][:12]}: "
            "the store's index was replaced (by a new or an older file)"
        )
    if ident != mine[0]:
        return (
            f"is store {ident[:12]}, not store {mine[0][:12]} that {Path(root) / FILE} names: "
            "another store's index was put in its place"
        )
    if writes < mine[1]:
        wal = Path(str(db.path) + "-wal")
        cause = (
            f"the write-ahead log {wal} beside it is stale (a backup's, or a copy's)"
            if _logged(wal)
            else "it was restored from an older copy"
        )
        return (
            f"reads as write {writes} of this store, which has made {mine[1]}: {cause}; "
            "read as it is, the store would be rolled back"
        )
    return None


def _logged(wal: Path) -> bool:
    """``wal`` holds frames: more than its 32-byte header (an opener leaves an empty one)."""
    try:
        return os.stat(wal).st_size > 32
    except FileNotFoundError:
        return False


def refuse(root: Path, db: LockedConnection, path: Path) -> None:
    """Damaged, in one line, for an index that is not the store it should be."""
    why = problem(root, db)
    if why:
        raise Damaged(f"the store index {path} {why}; {_REPAIR}")


def refuse_missing(root: Path, path: Path) -> None:
    """Damaged when the index is gone while ``store.json`` says a store was here: SQLite would
    make an empty index and every run would read as never made."""
    if not path.exists() and (mine := recorded(root)) is not None:
        raise Damaged(
            f"the store index {path} is missing, while {Path(root) / FILE} names store "
            f"{mine[0][:12]}: it was deleted or moved; `kit store check --repair` "
            "starts a new index and keeps every array file"
        )


HOLDS = hasattr(sqlite3.Connection, "setconfig")  # Python 3.12 and later


def hold_checkpoints(conn: sqlite3.Connection, hold: bool) -> None:
    """While held, closing ``conn`` never copies the write-ahead log into the index: an index
    refused for a stale log is left exactly as it was found (SQLite would make the rollback
    permanent on the last close). Before Python 3.12, ``looked_at`` does it first instead."""
    if HOLDS:
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, hold)  # type: ignore[attr-defined,unused-ignore]  # noqa: E501 (3.12+)


def _read_only(path: Path) -> LockedConnection:
    """``path`` opened read-only: its close never writes the log into the index."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    return LockedConnection(conn, path)


def looked_at(root: Path, path: Path) -> None:
    """Refuse, as the open does, an index that is not this store or is damaged, read through a
    read-only connection: where SQLite cannot be told not to checkpoint on close (Python 3.11),
    the writer's connection is opened only once it passes."""
    if not path.exists():
        return
    db = _read_only(path)
    try:
        refuse(root, db, path)
        refuse_damaged(db, path)
    finally:
        db.close()


def remember(store: Store) -> None:
    """Give a store without an id (a new one, or one older kits made) its id, and write
    ``store.json`` when it is absent: the index's own record, as it is now."""
    ident, _ = in_index(store.db)
    if ident is None:
        with store._tx(count=False) as db:  # the first opener's id stays
            db.execute("INSERT OR IGNORE INTO meta VALUES ('store', ?)", (uuid.uuid4().hex,))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
    ident, writes = in_index(store.db)
    if recorded(store.root) is None and ident is not None:
        write(store.root, ident, writes)


def write(root: Path, ident: str, writes: int) -> None:
    write_bytes(Path(root) / FILE, json.dumps({"store": ident, "generation": writes}).encode())


def counted(store: Store, db: LockedConnection) -> int:
    """Count one write in the transaction open on ``db``; the count it now holds."""
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
    return in_index(db)[1]


def after_commit(store: Store, writes: int) -> None:
    """``store.json`` says ``writes``, once they are committed. A write that fails (a full disk)
    leaves it behind the index, which is sound: only an index behind it is refused."""
    if store.identity is None:  # given one as the store opened: only a read-only store lacks it
        return
    try:
        write(store.root, store.identity, writes)
    except KitError:
        pass


def still_here(store: Store) -> None:
    """KitError unless the index at the store's path is still the one this process opened: a
    run whose store was deleted or replaced under it must not be reported stored."""
    path = store.root / "store.sqlite"
    try:
        st = os.stat(path)
        now: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except FileNotFoundError:
        now = None
    try:
        mine = recorded(store.root)
    except NotKits:
        mine = None
    if now == store.opened_as and (mine is None or mine[0] == store.identity):
        return
    what = "deleted" if now is None else "replaced"
    raise KitError(
        f"the store index {path} was {what} while this command ran (by something "
        "else than kit: the pipeline itself?); what it made since is not in the store "
        "and nothing was reported stored: `kit store check` says what is there"
    )


# -- repair -----------------------------------------------------------------------------------
def _alone(path: Path) -> tuple[str | None, int]:
    """(store id, writes) of the index file read without the write-ahead log beside it."""
    with tempfile.TemporaryDirectory(
        dir=path.parent / "tmp" if (path.parent / "tmp").is_dir() else path.parent,
        prefix=f"tmp-{os.getpid()}-",
    ) as tmp:
        copy = Path(tmp) / "alone.sqlite"
        shutil.copyfile(path, copy)
        conn = sqlite3.connect(copy)
        try:
            return in_index(_Plain(conn))
        finally:
            conn.close()


class _Plain:
    """A bare connection read as LockedConnection is (rows, fetched whole)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, args: Params = ()) -> _Rows:
        return _Rows(self.conn.execute(sql, args).fetchall())


def repair(root: Path) -> list[str]:
    """Make the index at ``root`` the store's again before it is opened; what was done, as lines.

    A missing index: ``store.json`` is set aside and a new store starts (its arrays are kept:
    the check moves them to unindexed/). An index behind ``store.json`` with a write-ahead log
    beside it that it is not behind without: the log is stale and is set aside (kept), and the
    index is the store as it last wrote it. Anything else (another store's index, a restored
    copy): the index is taken as it is and ``store.json`` says so."""
    root, stamp = Path(root), time.strftime("%Y%m%d-%H%M%S")
    path = root / "store.sqlite"
    try:
        mine = recorded(root)
    except NotKits as e:  # set aside before the store opens, which refuses it; made again there
        return home_files.set_aside([(root / FILE, e.why)])
    if mine is None:
        return []
    if not path.exists():
        moved = _set_aside(root, [FILE, "store.sqlite-wal", "store.sqlite-shm"], stamp)
        return [
            f"the store index {path} was missing (store {mine[0][:12]}): a new index is made; "
            f"{', '.join(moved)} moved aside (kept), every array file kept"
        ]
    db = _read_only(path)  # looked at only: the log is never copied in
    try:
        why = problem(root, db)
        ident, writes = in_index(db)
    except DamagedIndex:  # the open says so, and a repair rebuilds it from the records
        return []
    finally:
        db.close()
    if why is None:
        return []
    wal = root / "store.sqlite-wal"
    if _logged(wal) and ident == mine[0] and writes < mine[1]:
        alone = _alone(path)
        if alone[0] == mine[0] and alone[1] >= mine[1]:
            moved = _set_aside(root, ["store.sqlite-wal", "store.sqlite-shm"], stamp)
            return [
                f"the store index {path} {why}: without its log it is write {alone[1]}, as "
                f"this store last wrote it; {', '.join(moved)} moved aside (kept)"
            ]
    if ident is None:  # an index with no id is given one as it opens
        _set_aside(root, [FILE], stamp)
    else:
        write(root, ident, writes)
    return [
        f"the store index {path} {why}: taken as it is (what the store held beyond it is not in it)"
    ]


def _set_aside(root: Path, names: Iterable[str], stamp: str) -> list[str]:
    done = []
    for name in names:
        src = root / name
        if os.path.lexists(src):
            dest = src.with_name(f"{name}.set-aside-{stamp}")
            os.replace(src, dest)
            done.append(str(dest))
    return done
