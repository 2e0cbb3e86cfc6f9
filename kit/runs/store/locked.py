"""The store's one SQLite connection (used by one thread at a time), and the arrays lock that
keeps `kit store check --repair` from deleting what a writer is moving in."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from ...core.atomic import no_space
from ...core.errors import KitError
from .layout import RECORDS, has_records


class StoreIndexError(KitError):
    """The store index cannot be read or written: damaged, or its disk is full. ``reason``:
    "damaged", "full" or "locked" (another kit held it past the wait), for a caller that
    tells them apart."""

    def __init__(self, message: str, reason: str = "damaged"):
        super().__init__(message)
        self.reason = reason


class DamagedIndex(StoreIndexError):
    """The index's file is damaged (not a full disk or a lock): repair rebuilds it from the
    records beside the arrays, where there are any (kit.runs.store.kept)."""


def index_problem(path: Path, e: sqlite3.Error) -> KitError | None:
    """The one-line error for what SQLite says about the index at ``path`` (None: not the
    file's state, e.g. a busy database or a bug, left to the caller)."""
    code = _primary(e)
    # SQLITE_FULL, or an I/O error that a full disk explains (a WAL that cannot grow): never
    # advice to move the index aside, which would lose nothing but cost every run
    if code == _SQLITE_FULL or _full(path):
        return StoreIndexError(no_space(path), reason="full")
    if code == _SQLITE_BUSY:
        return StoreIndexError(
            f"the store index {path} stayed locked by another kit for over a "
            "minute; run the same command again when it is done",
            reason="locked",
        )
    if isinstance(e, sqlite3.OperationalError) and code != _SQLITE_IOERR:
        return None
    return _damaged(path, str(e))  # rebuilt from the records beside the arrays, where there are any


# SQLite's primary result codes (https://sqlite.org/rescode.html): what kit tells apart by
_SQLITE_BUSY, _SQLITE_IOERR, _SQLITE_FULL = 5, 10, 13


def _primary(e: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``e`` (its extended code's low byte); None for an error
    Python's sqlite3 module raised itself, not SQLite (a text that does not decode as UTF-8)."""
    code = getattr(e, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def refuse_damaged(db: LockedConnection, path: Path) -> None:
    """StoreIndexError when SQLite's own check of the index's pages and their b-trees fails.

    Run at every open, so every command refuses a damaged index alike: each reader used to
    meet a damaged page only when its own query reached it (a zeroed page of an index over
    runs: `kit runs` exit 0, `kit budget` one line, `store check` exit 0). It reads every page
    once (about 0.3 s for an index of 20,000 runs, a few ms for a usual one)."""
    found = [r[0] for r in db.execute("PRAGMA quick_check(3)")]
    if found != ["ok"]:
        said = " ".join(str(r).replace("*** in database main ***", "") for r in found)
        raise _damaged(path, " ".join(said.split())[:300])  # SQLite's lines, as one


def _damaged(path: Path, msg: str) -> StoreIndexError:
    if has_records(path.parent):
        return DamagedIndex(
            f"the store index {path} is damaged ({msg}); `kit store check "
            f"--repair` moves it aside (kept) and rebuilds it from the runs' "
            f"records in {path.parent / RECORDS}, losing no run whose records and "
            "arrays survive"
        )
    return DamagedIndex(
        f"the store index {path} is damaged ({msg}); kit cannot rebuild it from the arrays "
        f"(runs' specs and manifests live only in the index): move it aside (mv {path} "
        f"{path}.damaged) and run again: runs are made anew, arrays on disk are kept and reused"
    )


def read_only_index(path: Path) -> sqlite3.Connection:
    """The index opened for reading only, in a folder this user cannot write.

    SQLite's mode=ro still needs the WAL's -shm file, which it cannot make there once the last
    writer has closed; the index is then opened immutable (read as it is on disk, which is all a
    reader that cannot write may expect)."""
    if not path.exists():
        raise KitError(
            "the store is empty: run `kit run --factor repeat` first (in a KIT_HOME "
            f"you can write; {path.parent} is not writable by this user)"
        )
    for query in ("mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?{query}", uri=True, timeout=60, check_same_thread=False
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as e:
            conn.close()
            why = e
    raise KitError(f"the store index {path} cannot be read ({why})")


def _full(path: Path) -> bool:
    """The disk holding ``path`` has (next to) no space left."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1 << 20


def _lenient(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


Params = Sequence[Any] | Mapping[str, Any]  # a statement's arguments, as sqlite3 takes them


class _Rows(list[Any]):
    """A query's rows, fetched whole while the connection was held (each a tuple of what
    SQLite holds: its columns are typed by the reader, kit.runs.store.rows)."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)


class LockedConnection:
    """The store's one SQLite connection, used by one thread at a time.

    Runs finish on several threads (--jobs) while others read; a sqlite3 connection shared
    without a lock fails ("bad parameter or other API misuse"). Every statement runs under one
    re-entrant lock and hands back its rows already fetched; ``with db:`` is a transaction that
    holds the lock until it commits or rolls back. A damaged index or a full disk is one
    KitError naming the file (``index_problem``), wherever in a command it is found."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = Path(path)
        self.lock = threading.RLock()

    @contextmanager
    def _said(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as e:
            err = index_problem(self.path, e)
            if err is None:
                raise
            raise err from None

    def execute(self, sql: str, args: Params = ()) -> _Rows:
        with self.lock, self._said():
            try:
                return _Rows(self.conn.execute(sql, args).fetchall())
            except sqlite3.OperationalError as e:
                if _primary(e) is not None:  # SQLite's own error, not a row's text
                    raise
            # a damaged page left a text that is not UTF-8: read again with its bytes kept as
            # lone surrogates, which the row's reader names as damage (kit.runs.store.rows);
            # only then, so that every other read keeps SQLite's own fast decoding
            self.conn.text_factory = _lenient
            try:
                return _Rows(self.conn.execute(sql, args).fetchall())
            finally:
                self.conn.text_factory = str

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        with self.lock, self._said():
            self.conn.executemany(sql, rows)

    def executescript(self, script: str) -> None:
        with self.lock, self._said():
            self.conn.executescript(script)

    def commit(self) -> None:
        with self.lock, self._said():
            self.conn.commit()

    def rollback(self) -> None:
        with self.lock, self._said():
            self.conn.rollback()

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> LockedConnection:
        self.lock.acquire()
        self.conn.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        try:
            with self._said():
                return self.conn.__exit__(kind, error, tb)
        finally:
            self.lock.release()


class ArraysLock:
    """An flock on ``store.lock`` beside the index: shared by every writer from the moment it
    moves a run's arrays in until the run is indexed, exclusive for a repair while it decides
    what no run refers to and deletes it.

    Why flock: writers must not wait for each other (a plan stores runs on several threads, and
    several plans share a store), and the one maintainer must wait for all of them; a shared and
    an exclusive flock say exactly that, across processes and threads alike (each holder opens
    the file itself). The kernel drops a lock when its process dies, so a kill -9 mid-store
    never leaves the store locked. SQLite's own lock is one writer at a time and ends with each
    transaction, so it cannot span the move and the index."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @contextmanager
    def _held(self, how: int, reading: bool = False) -> Iterator[None]:
        """``reading``: a check that only reads waits for the writers as a repair does, but
        makes no lock file and needs none it can write (flock holds on a file opened for
        reading); one it cannot open (none yet, or not kit's: the check names it) is not
        waited on."""
        try:
            if reading:
                fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            else:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            if not reading:
                raise KitError(
                    f"cannot open the store's lock file {self.path}: {e.strerror or e}"
                ) from None
            fd = None
        if fd is None:
            yield
            return
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def writing(self) -> AbstractContextManager[None]:
        """Held (shared) while arrays are moved in and indexed."""
        return self._held(fcntl.LOCK_SH)

    def maintaining(self, reading: bool = False) -> AbstractContextManager[None]:
        """Held (exclusive) while a repair finds and deletes files no run refers to, and while
        a check (``reading``) matches the files with the index."""
        return self._held(fcntl.LOCK_EX, reading)
