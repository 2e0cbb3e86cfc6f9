"""The store's one SQLite connection, used by one thread at a time."""

from __future__ import annotations

import threading


class _Rows(list):
    """A query's rows, fetched whole while the connection was held."""

    def fetchone(self):
        return self[0] if self else None

    def fetchall(self):
        return list(self)


class LockedConnection:
    """The store's one SQLite connection, used by one thread at a time.

    Runs finish on several threads (--jobs) while others read; a sqlite3 connection shared
    without a lock fails ("bad parameter or other API misuse"). Every statement runs under one
    re-entrant lock and hands back its rows already fetched; ``with db:`` is a transaction that
    holds the lock until it commits or rolls back."""

    def __init__(self, conn):
        self.conn = conn
        self.lock = threading.RLock()

    def execute(self, sql, args=()):
        with self.lock:
            return _Rows(self.conn.execute(sql, args).fetchall())

    def executemany(self, sql, rows):
        with self.lock:
            self.conn.executemany(sql, rows)

    def executescript(self, script):
        with self.lock:
            self.conn.executescript(script)

    def commit(self):
        with self.lock:
            self.conn.commit()

    def rollback(self):
        with self.lock:
            self.conn.rollback()

    def close(self):
        with self.lock:
            self.conn.close()

    def __enter__(self):
        self.lock.acquire()
        self.conn.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            return self.conn.__exit__(*exc)
        finally:
            self.lock.release()
