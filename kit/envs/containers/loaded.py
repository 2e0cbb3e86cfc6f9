"""Images loaded from a bundle (``kit compare --trust-image``), each a stack of its own name.

A carried image is a stranger's code. It never takes the name of an image built here: it is
stack ``NAME@bundle-ID12`` (its id's first 12 hex digits), tagged ``localhost/kit-bundle:...``,
recorded in ``$KIT_HOME/containers/loaded/`` with the recipe it came with and the bundle's
sha256, so a run in it says so in its spec, and ``kit stacks`` lists it apart.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from ...core.atomic import write_bytes
from ...core.paths import subdir
from ...core.small_files import read_small
from . import archives, images
from .runtime import Runtime

PREFIX = "bundle-"
_NAME = re.compile(r"bundle-([0-9a-f]{12})")


def is_loaded(tail: str) -> bool:
    """Is ``tail`` (what follows the @ of a container stack's name) a loaded image's?"""
    return _NAME.fullmatch(tail) is not None


def name(stack: str, image: str) -> str:
    return f"{stack}@{PREFIX}{image[7:19]}"


def tag(stack: str, image: str) -> str:
    return f"localhost/kit-bundle:{stack}-{image[7:19]}"


def _folder() -> Path:
    return subdir("containers") / "loaded"


def record(stack_name: str) -> dict | None:
    """What loading ``stack_name``'s image recorded, checked as a build's record is."""
    try:
        doc = json.loads(read_small(_folder() / f"{stack_name}.json") or b"null")
    except ValueError:
        return None
    if not images.well_formed(doc) or name(doc.get("stack", ""), doc["id"]) != stack_name:
        return None
    return doc


def recorded() -> list:
    """The names of the loaded images recorded here, sorted."""
    return sorted(f.name[:-5] for f in _folder().glob("*@bundle-*.json"))


def load(rt: Runtime, stack: str, archive: Path, recipe: dict, bundle_sha256: str) -> str:
    """Check ``archive`` against ``recipe`` (kit.envs.containers.archives), load it and record
    it; returns its stack name. KitError, one line, for an archive that is not its recipe's."""
    checked = archives.check(archive, {**recipe, "stack": stack})
    archives.load(rt, archive, checked, tag(stack, checked["id"]))
    out = name(stack, checked["id"])
    rec = {
        **recipe,
        "stack": stack,
        "id": checked["id"],
        "diff_ids": checked["diff_ids"],
        "bundle_sha256": bundle_sha256,
        "archive_bytes": checked["bytes"],
        "loaded": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_bytes(_folder() / f"{out}.json", json.dumps(rec, indent=1).encode())
    return out
