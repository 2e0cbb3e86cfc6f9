"""This machine's identity in the store: runs from several machines live side by side."""

from __future__ import annotations

import json
import platform
import sqlite3
import uuid

from .atomic import create_once
from .errors import KitError
from .paths import kit_home, writable


def host() -> dict:
    """{"id", "name"}: a random id made once per KIT_HOME (hostnames change), and the hostname.

    A removed host.json is made again with the id the store index beside it recorded
    (kit.runs.store.index keeps it): a new id would make every run of this machine look
    imported, and every plan run again."""
    home = kit_home(writing=False)
    path = home / "host.json"
    if not writable(home):  # a reader of a store it cannot write (another user's): no file made
        try:
            return json.loads(path.read_bytes())
        except (ValueError, OSError):  # absent or the owner's alone: the index's record
            return {"id": _recorded_id(home / "store.sqlite") or "unknown",
                    "name": platform.node() or "unknown"}
    path = kit_home() / "host.json"
    if not path.exists():
        mine = {"id": _recorded_id(path.parent / "store.sqlite") or uuid.uuid4().hex[:16],
                "name": platform.node() or "unknown"}
        # first writer wins: kits starting together on a fresh KIT_HOME must share one id
        create_once(path, json.dumps(mine).encode())
    try:
        return json.loads(path.read_bytes())
    except (ValueError, OSError):
        raise KitError(f"{path} is damaged; remove it and kit makes it again (from the store "
                       "index's record of this machine, where there is one)") from None


def _recorded_id(index) -> str | None:
    """The host id the store index at ``index`` recorded, read without changing it; None when
    there is no index, no record, or it cannot be read (the index names its own damage)."""
    if not index.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute("SELECT value FROM meta WHERE key='host'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return row[0] if row and isinstance(row[0], str) and row[0].isalnum() else None


def host_id() -> str:
    return host()["id"]
