"""This machine's identity in the store: runs from several machines live side by side. Made once
per KIT_HOME as host.json (kit.core.hosts reads it), and again from the index's record."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import uuid
from pathlib import Path

from ...core.atomic import create_once
from ...core.errors import KitError
from ...core.hosts import Host, read_record
from ...core.paths import kit_home, writable


def host() -> Host:
    """{"id", "name"}: a random id made once per KIT_HOME (hostnames change), and the hostname.

    A removed host.json is made again with the id the store index beside it recorded
    (kit.runs.store.index keeps it): a new id would make every run of this machine look
    imported, and every plan run again."""
    home = kit_home(writing=False)
    path = home / "host.json"
    if not writable(home):  # a reader of a store it cannot write (another user's): no file made
        try:
            return read_record(path) or _recorded(home)
        except PermissionError:  # the owner's alone: the index's record
            return _recorded(home)
    path = kit_home() / "host.json"
    if not os.path.lexists(path):
        # first writer wins: kits starting together on a fresh KIT_HOME must share one id
        create_once(path, json.dumps(_recorded(path.parent, new=True)).encode())
    got = read_record(path)
    if got is None:  # removed between the look and the read
        raise KitError(f"{path} vanished while it was read; run the command again")
    return got


def _recorded(home: Path, new: bool = False) -> Host:
    """This machine's record from the index's, or (``new``) a new id where it has none."""
    made = _recorded_id(home / "store.sqlite") or (uuid.uuid4().hex[:16] if new else "unknown")
    return {"id": made, "name": platform.node() or "unknown"}


def _recorded_id(index: Path) -> str | None:
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
    value = row[0] if row else None
    return value if isinstance(value, str) and value.isalnum() else None


def host_id() -> str:
    return host()["id"]
