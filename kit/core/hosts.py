"""host.json, this machine's record in KIT_HOME: its id in the store (kit.runs.store.hosts
makes it) and its hostname."""

from __future__ import annotations

from typing import TypedDict

from .paths import StrPath
from .small_files import NotKits, read_home_json

HOST_BYTES = 4096  # {"id": 16 hex digits, "name": a hostname}


class Host(TypedDict):
    """host.json: this machine's id in the store (16 hex digits) and its hostname."""

    id: str
    name: str


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
