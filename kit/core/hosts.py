"""This machine's identity in the store: runs from several machines live side by side."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import uuid
from pathlib import Path
from typing import TypedDict

from .atomic import create_once
from .errors import KitError
from .paths import StrPath, kit_home, writable
from .small_files import NotKits, read_home_json

HOST_BYTES = 4096  # {"id": 16 hex digits, "name": a hostname}


class Host(TypedDict):
    """host.json: this machine's id in the store (16 hex digits) and its hostname."""

    id: str
    name: str


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


def read_record(path: StrPath) -> Host | None:
    """host.json as kit wrote it ({"id", "name"}), None when absent; read bounded, never
    through a link or from a FIFO (a /dev/zero there was a MemoryError, a FIFO a hang)."""
    doc = read_home_json(path, HOST_BYTES)
    if doc is None:
        return None
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("id"), str)
        and doc["id"].isalnum()
        and isinstance(doc.get("name"), str)
    ):
        raise NotKits(path, "is not this machine's {id, name}")
    return {"id": doc["id"], "name": doc["name"]}


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
