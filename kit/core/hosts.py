"""This machine's identity in the store: runs from several machines live side by side."""

from __future__ import annotations

import json
import platform
import uuid

from .atomic import write_bytes
from .paths import kit_home


def host() -> dict:
    """{"id", "name"}: a random id made once per KIT_HOME (hostnames change), and the hostname."""
    path = kit_home() / "host.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        h = {"id": uuid.uuid4().hex[:16], "name": platform.node() or "unknown"}
        write_bytes(path, json.dumps(h).encode())
        return h


def host_id() -> str:
    return host()["id"]
