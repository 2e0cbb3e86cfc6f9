"""This machine's identity in the store: runs from several machines live side by side."""

from __future__ import annotations

import json
import platform
import uuid

from .atomic import create_once
from .errors import KitError
from .paths import kit_home


def host() -> dict:
    """{"id", "name"}: a random id made once per KIT_HOME (hostnames change), and the hostname."""
    path = kit_home() / "host.json"
    mine = {"id": uuid.uuid4().hex[:16], "name": platform.node() or "unknown"}
    # first writer wins: kits starting together on a fresh KIT_HOME must share one id
    try:
        return json.loads(create_once(path, json.dumps(mine).encode()))
    except ValueError:
        raise KitError(f"{path} is damaged; remove it and kit makes a new host id") from None


def host_id() -> str:
    return host()["id"]
