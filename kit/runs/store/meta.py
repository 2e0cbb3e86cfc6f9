"""The index's record of itself: when it was made, and the host id its runs are made under."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .hosts import host_id

if TYPE_CHECKING:  # the store opens through this module: its type only, for annotations
    from .index import Store
    from .locked import LockedConnection


def remember(store: Store) -> None:
    """Record, once, when the index was made and this machine's host id.

    Array files older than the index may be another index's: repair never deletes them
    (kit.runs.store.check). A removed host.json is made again with the recorded id
    (kit.core.hosts), so that this machine's runs never look imported."""
    known = dict(store.db.execute("SELECT key, value FROM meta"))
    if "born" not in known or "host" not in known:  # a new index (or one older kits made)
        with store._tx(count=False) as db:  # the first opener's values stay
            db.execute("INSERT OR IGNORE INTO meta VALUES ('born', ?)", (str(time.time()),))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('host', ?)", (host_id(),))


def born(db: LockedConnection) -> float:
    """When the index was made, in seconds since the epoch."""
    return float(db.execute("SELECT value FROM meta WHERE key='born'").fetchone()[0])


def host(db: LockedConnection) -> str:
    return str(db.execute("SELECT value FROM meta WHERE key='host'").fetchone()[0])
